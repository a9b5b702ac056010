// BokehJS for the notebook views, from the Hermes server extension (the server's `bokeh`
// package, the version the kernels' views are made with): loaded once into every page, before
// any notebook opens, so views render after a reload and in a new tab. Never from a CDN.
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

// in load order: the widgets, tables and WebGL parts register themselves with bokeh.min.js
const FILES = ['bokeh.min.js', 'bokeh-gl.min.js', 'bokeh-widgets.min.js', 'bokeh-tables.min.js'];

export interface IBokehEmbed {
  embed_item(item: { doc: unknown; root_id: string }, target: HTMLElement): Promise<unknown>;
}

export function bokeh(): { embed: IBokehEmbed } | undefined {
  return (window as unknown as { Bokeh?: { embed: IBokehEmbed } }).Bokeh;
}

function addScript(src: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const script = document.createElement('script');
    script.src = src;
    script.async = false;
    script.dataset.hermes = 'bokehjs';
    script.onload = () => resolve();
    script.onerror = () => reject(new Error(`cannot load ${src}`));
    document.head.appendChild(script);
  });
}

let loading: Promise<boolean> | null = null;

// true once BokehJS is in the page (already there, or loaded now); false when the server
// extension does not serve it (then the kernel's first view loads it, as without this extension)
export function loadBokehJS(): Promise<boolean> {
  if (loading === null) {
    loading = (async () => {
      if (bokeh()?.embed) {
        return true;
      }
      const base = URLExt.join(ServerConnection.makeSettings().baseUrl, 'hermes', 'bokeh', 'js');
      try {
        for (const file of FILES) {
          await addScript(URLExt.join(base, file));
        }
        return true;
      } catch (err) {
        console.warn('Hermes: BokehJS is not served by the Hermes server extension', err);
        return false;
      }
    })();
  }
  return loading;
}
