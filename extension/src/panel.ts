// The "Hermes devices" panel: each device's live load, the log records of every kernel and
// the measured kernels (polled while the panel is shown; the kernels every 10 s),
// the server machine's devices and the scheduler's history, its kernels named as the
// notebook's views name them.
// Every value is written with textContent: nothing from the server is parsed as HTML.
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IDevice, IHistory, IKernelHistory, ILoad, requestAPI } from './api';
import { heading, table } from './dom';
import { LogSection } from './logs';

/** How often the panel's live load is polled, in ms. */
export const LOAD_POLL_MS = 2000;

/** The measured kernels are read again every this many polls (10 s). */
export const KERNEL_POLLS = 5;

/** A device's load as one short text: "cpu:0 12%". */
export function loadText(d: { id: string; busy_pct: number }): string {
  return `${d.id} ${d.busy_pct.toFixed(0)}%`;
}

function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

// the kernel's name in the views ("edges: blur5+sobel"), its signature where no run named it
function kernelTable(kernels: IKernelHistory[]): HTMLTableElement {
  const element = table(
    ['kernel', 'device', 'runs', 'median ms'],
    kernels.map(k => [k.name || k.signature, k.device, `${k.runs}`, k.median_ms.toFixed(3)])
  );
  element.classList.add('hermes-kernels');
  Array.from(element.tBodies[0].rows).forEach((row, i) => {
    row.cells[0].title = kernels[i].signature; // the hashed key, on hover
  });
  return element;
}

export class DevicesPanel extends Widget {
  constructor() {
    super();
    this.id = 'hermes-devices';
    this.title.label = 'Hermes devices';
    this.title.closable = true;
    this.addClass('hermes-devices-panel');
    const refresh = document.createElement('button');
    refresh.textContent = 'Refresh';
    refresh.className = 'jp-Button hermes-refresh';
    refresh.onclick = () => void this.refresh();
    this.node.appendChild(refresh);
    this.node.appendChild(this._load);
    this.node.appendChild(this._content);
    this.node.appendChild(this._log.node);
  }

  /** Poll the live load while the panel is in the page. */
  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    let polls = 0;
    const poll = (): void => {
      void this.refreshLoad();
      void this._log.refresh();
      // the kernels a notebook runs meanwhile appear without a click on Refresh
      if (++polls % KERNEL_POLLS === 0 && this.node.dataset.loaded === 'true') {
        void this.refreshKernels();
      }
    };
    poll();
    this._timer = window.setInterval(poll, LOAD_POLL_MS);
  }

  protected onBeforeDetach(msg: Message): void {
    window.clearInterval(this._timer);
    super.onBeforeDetach(msg);
  }

  async refreshLoad(): Promise<void> {
    try {
      const load = await requestAPI<ILoad>('load');
      this._load.replaceChildren(
        this._heading(`Live load (busy % of the last ${load.window_s.toFixed(0)} s)`),
        table(
          ['device', 'busy', 'kernels', 'last run', 'memory'],
          load.devices.map(d => [
            d.id, `${d.busy_pct.toFixed(0)}%`, `${d.kernels}`,
            d.last_run_s_ago === null ? '—' : `${d.last_run_s_ago.toFixed(0)} s ago`, d.memory
          ])
        )
      );
      this.node.dataset.loadUpdates = `${Number(this.node.dataset.loadUpdates ?? 0) + 1}`;
    } catch (error) {
      const message = this._heading(`Hermes load: ${(error as Error).message}`);
      message.className = 'hermes-error';
      this._load.replaceChildren(message);
    }
  }

  async refresh(): Promise<void> {
    const content = this._content;
    content.replaceChildren(this._heading('Loading…'));
    try {
      const [{ devices }, history] = await Promise.all([
        requestAPI<{ devices: IDevice[] }>('devices'),
        requestAPI<IHistory>('history')
      ]);
      content.replaceChildren(
        this._heading(`Devices (${devices.length})`),
        table(
          ['id', 'name', 'memory', 'compute units', 'fp64'],
          devices.map(d => [
            d.id, d.name, d.memory ?? gib(d.memory_bytes), `${d.compute_units}`, d.fp64 ? 'yes' : 'no'
          ])
        ),
        this._heading(`Host links`),
        table(
          ['device', 'to device GB/s', 'to host GB/s', 'latency µs'],
          history.links.map(l => [
            l.device, l.h2d_gb_per_s.toFixed(2), l.d2h_gb_per_s.toFixed(2), l.h2d_latency_us.toFixed(0)
          ])
        ),
        this._kernels
      );
      this._showKernels(history);
      this.node.dataset.loaded = 'true';
    } catch (error) {
      const message = this._heading(`Hermes: ${(error as Error).message}`);
      message.className = 'hermes-error';
      content.replaceChildren(message);
    }
  }

  /** Read the scheduler's history again and redraw the measured kernels alone. */
  async refreshKernels(): Promise<void> {
    try {
      this._showKernels(await requestAPI<IHistory>('history'));
    } catch {
      // the next poll or a click on Refresh tries again; the table shown stays
    }
  }

  private _showKernels(history: IHistory): void {
    this._kernels.replaceChildren(
      this._heading(`Measured kernels (${history.runs} runs in ${history.path})`),
      kernelTable(history.kernels)
    );
  }

  private _heading(text: string): HTMLElement {
    return heading(text);
  }

  private _content = document.createElement('div');
  private _kernels = document.createElement('div');
  private _load = document.createElement('div');
  private _log = new LogSection();
  private _timer = 0;
}
