// Hermes in JupyterLab: a status bar item with each device's live load, and a panel (also in the
// command palette) listing the server machine's devices and what the scheduler measured;
// BokehJS in every page and a renderer for the notebook views' outputs (views.ts).
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { IStatusBar } from '@jupyterlab/statusbar';
import { Widget } from '@lumino/widgets';

import { IDevice, ILoad, requestAPI } from './api';
import { loadBokehJS } from './bokeh';
import { DevicesPanel, loadText } from './panel';
import { addViewRenderer } from './views';

const OPEN = 'hermes:open-devices';
/** How often the status bar item's live load is polled, in ms. */
const STATUS_POLL_MS = 5000;

const plugin: JupyterFrontEndPlugin<void> = {
  id: '@hermes-nb/jupyterlab:plugin',
  description: 'Hermes devices and scheduler history',
  autoStart: true,
  optional: [ICommandPalette, IStatusBar],
  activate: (app: JupyterFrontEnd, palette: ICommandPalette | null, statusBar: IStatusBar | null) => {
    let panel: MainAreaWidget<DevicesPanel> | null = null;
    app.commands.addCommand(OPEN, {
      label: 'Hermes: Show Devices',
      execute: async () => {
        if (panel === null || panel.isDisposed) {
          panel = new MainAreaWidget({ content: new DevicesPanel() });
          panel.id = 'hermes-devices-main';
          panel.title.label = 'Hermes devices';
          app.shell.add(panel, 'main');
        }
        app.shell.activateById(panel.id);
        await panel.content.refresh();
      }
    });
    palette?.addItem({ command: OPEN, category: 'Hermes' });

    if (statusBar) {
      const item = new Widget();
      item.addClass('hermes-status');
      item.node.textContent = 'Hermes';
      item.node.title = 'Hermes devices (click to open)';
      item.node.onclick = () => void app.commands.execute(OPEN);
      statusBar.registerStatusItem('@hermes-nb/jupyterlab:status', { item, align: 'left', rank: 100 });
      requestAPI<{ devices: IDevice[] }>('devices')
        .then(({ devices }) => {
          item.node.textContent = `Hermes: ${devices.map(d => d.id).join(' · ')}`;
          // then each device's live load: "Hermes: cpu:0 12% · opencl:0 0%"
          const poll = (): void => {
            requestAPI<ILoad>('load')
              .then(load => {
                item.node.textContent = `Hermes: ${load.devices.map(loadText).join(' · ')}`;
              })
              .catch(() => undefined); // keep the last text; the panel shows the error
          };
          poll();
          window.setInterval(poll, STATUS_POLL_MS);
        })
        .catch(() => {
          item.node.textContent = 'Hermes: server extension not enabled';
        });
    }
  }
};

// activated before JupyterLab restores its notebooks (their outputs wait for app.started, which
// waits for this), so a view never renders into a page without BokehJS
const views: JupyterFrontEndPlugin<void> = {
  id: '@hermes-nb/jupyterlab:views',
  description: 'BokehJS and the renderer of Hermes views in notebooks',
  autoStart: true,
  activate: async (app: JupyterFrontEnd) => {
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: panel => addViewRenderer(panel as unknown as Parameters<typeof addViewRenderer>[0])
    });
    await loadBokehJS();
  }
};

export default [plugin, views];
