// Hermes view outputs: the live widget while its model exists in the kernel, else the static
// copy of the plot the output carries (a reopened notebook, a new kernel, no kernel at all).
import type { ISessionContext } from '@jupyterlab/apputils';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { PanelLayout, Widget } from '@lumino/widgets';

import { bokeh, loadBokehJS } from './bokeh';

export const HERMES_VIEW_MIME = 'application/vnd.hermes.view.v1+json';
const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
// ahead of the widget renderer (-10), which shows "model not found" for a saved view
export const HERMES_VIEW_RANK = -20;
// how long a view waits for the kernel and the widget manager before drawing its copy
const PATIENCE_MS = 30_000;

interface IHermesView {
  // a Bokeh plot's document, in outputs saved before it lived only in the text/html fragment;
  // a string: a saved notebook sorts object keys, BokehJS needs their order
  doc_json?: string;
  root_id?: string; // a Bokeh plot's root; absent for a widget that saved a picture of itself
  model_id: string;
  classes: string[];
  summary: string;
}

// the part of ipywidgets' manager that says whether a widget model exists
interface IWidgetManager {
  restoredStatus: boolean;
  restored: { connect(slot: () => void): boolean; disconnect(slot: () => void): boolean };
  get_model(id: string): Promise<unknown>;
}

function within<T>(promise: Promise<T>, ms: number, otherwise: T): Promise<T> {
  return Promise.race([promise, new Promise<T>(resolve => setTimeout(() => resolve(otherwise), ms))]);
}

function restored(manager: IWidgetManager): Promise<boolean> {
  if (manager.restoredStatus) {
    return Promise.resolve(true);
  }
  return within(new Promise<boolean>(resolve => {
    const done = () => {
      manager.restored.disconnect(done);
      resolve(true);
    };
    manager.restored.connect(done);
  }), PATIENCE_MS, false);
}

// the Bokeh document in a view's standalone HTML fragment (its JSON data block), parsed as
// data: nothing of the fragment runs
function documentOf(html: unknown): string | undefined {
  if (typeof html !== 'string') {
    return undefined;
  }
  const page = new DOMParser().parseFromString(html, 'text/html');
  return page.querySelector('script[type="application/json"]')?.textContent ?? undefined;
}

export class HermesViewRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private _rendermime: IRenderMimeRegistry, private _session: ISessionContext) {
    super();
    this.layout = new PanelLayout();
    this.addClass('hermes-view-output');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const view = model.data[HERMES_VIEW_MIME] as unknown as IHermesView;
    const hasBokeh = await loadBokehJS();
    const live = await this._liveRenderer(model, view);
    if (live !== null) {
      (this.layout as PanelLayout).addWidget(live);
      await live.renderModel(model);
    } else if (view.root_id === undefined) {
      await this._renderSnapshot(model, view);
    } else {
      const doc = view.doc_json ?? documentOf(model.data['text/html']);
      await this._renderStatic(view, view.root_id, doc, hasBokeh);
    }
  }

  // the picture a widget left of itself: its text/html, rendered (and sanitized for an
  // untrusted notebook) by JupyterLab's own HTML renderer
  private async _renderSnapshot(model: IRenderMime.IMimeModel, view: IHermesView): Promise<void> {
    this.addClass('hermes-static-view');
    view.classes.forEach(c => this.addClass(c));
    const caption = document.createElement('div');
    caption.className = 'hermes-static-caption';
    caption.textContent = 'saved picture: run the cell for a live widget';
    const html = this._rendermime.createRenderer('text/html');
    const layout = this.layout as PanelLayout;
    layout.addWidget(new Widget({ node: caption })); // a widget too, so it stays first
    layout.addWidget(html);
    await html.renderModel(model);
  }

  // the widget renderer, when the view's widget model exists in the notebook's kernel
  private async _liveRenderer(model: IRenderMime.IMimeModel, view: IHermesView): Promise<IRenderMime.IRenderer | null> {
    if (!model.data[WIDGET_MIME] || !this._rendermime.getFactory(WIDGET_MIME)) {
      return null;
    }
    await within(this._session.ready, PATIENCE_MS, undefined);
    if (!this._session.session?.kernel) {
      return null;
    }
    const renderer = this._rendermime.createRenderer(WIDGET_MIME);
    const pending = (renderer as unknown as { _manager?: { promise: Promise<IWidgetManager> } })._manager;
    if (pending === undefined) {
      return renderer; // an ipywidgets that hides its manager: let it decide, as without Hermes
    }
    const manager = await pending.promise;
    const found = (await restored(manager)) && (await manager.get_model(view.model_id).then(() => true, () => false));
    if (found) {
      return renderer;
    }
    renderer.dispose();
    return null;
  }

  private async _renderStatic(view: IHermesView, rootId: string, docJson: string | undefined,
                              hasBokeh: boolean): Promise<void> {
    this.addClass('hermes-view');
    this.addClass('hermes-static-view');
    view.classes.forEach(c => this.addClass(c));
    const caption = document.createElement('div');
    caption.className = 'hermes-static-caption';
    caption.textContent = `${view.summary} (saved picture: run the cell for a live view)`;
    const plot = document.createElement('div');
    this.node.append(caption, plot);
    const Bokeh = bokeh();
    if (!hasBokeh || !Bokeh || docJson === undefined) {
      return;
    }
    await this._attached;
    try {
      await Bokeh.embed.embed_item({ doc: JSON.parse(docJson), root_id: rootId }, plot);
    } catch (err) {
      console.warn('Hermes: the saved view could not be drawn', err);
    }
  }

  protected onAfterAttach(): void {
    this._attach();
  }

  private _attach: () => void = () => undefined;
  private _attached = new Promise<void>(resolve => {
    this._attach = resolve;
  });
}

// what a notebook needs to render Hermes views: its rendermime and its kernel session
interface INotebookLike {
  content: { rendermime: IRenderMimeRegistry };
  sessionContext: ISessionContext;
}

export function addViewRenderer(panel: INotebookLike): void {
  const rendermime = panel.content.rendermime;
  rendermime.addFactory({
    safe: false,
    mimeTypes: [HERMES_VIEW_MIME],
    createRenderer: () => new HermesViewRenderer(rendermime, panel.sessionContext)
  }, HERMES_VIEW_RANK);
}
