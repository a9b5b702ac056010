// The "Hermes devices" panel: each device's live load (polled while the panel is shown), the
// server machine's devices and the scheduler's history.
// Every value is written with textContent: nothing from the server is parsed as HTML.
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IDevice, IHistory, ILoad, requestAPI } from './api';

/** How often the panel's live load is polled, in ms. */
export const LOAD_POLL_MS = 2000;

/** A device's load as one short text: "cpu:0 12%". */
export function loadText(d: { id: string; busy_pct: number }): string {
  return `${d.id} ${d.busy_pct.toFixed(0)}%`;
}

function cell(row: HTMLTableRowElement, text: string, tag: 'td' | 'th' = 'td'): void {
  const element = document.createElement(tag);
  element.textContent = text;
  row.appendChild(element);
}

function table(headers: string[], rows: string[][]): HTMLTableElement {
  const element = document.createElement('table');
  element.className = 'hermes-table';
  cell(element.createTHead().insertRow(), '', 'th');
  const head = element.tHead!.rows[0];
  head.deleteCell(0);
  headers.forEach(h => cell(head, h, 'th'));
  const body = element.createTBody();
  rows.forEach(values => {
    const row = body.insertRow();
    values.forEach(v => cell(row, v));
  });
  return element;
}

function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
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
  }

  /** Poll the live load while the panel is in the page. */
  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    void this.refreshLoad();
    this._timer = window.setInterval(() => void this.refreshLoad(), LOAD_POLL_MS);
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
        this._heading(`Measured kernels (${history.runs} runs in ${history.path})`),
        table(
          ['kernel', 'device', 'runs', 'median ms'],
          history.kernels.map(k => [k.signature, k.device, `${k.runs}`, k.median_ms.toFixed(3)])
        )
      );
      this.node.dataset.loaded = 'true';
    } catch (error) {
      const message = this._heading(`Hermes: ${(error as Error).message}`);
      message.className = 'hermes-error';
      content.replaceChildren(message);
    }
  }

  private _heading(text: string): HTMLElement {
    const element = document.createElement('h3');
    element.textContent = text;
    return element;
  }

  private _content = document.createElement('div');
  private _load = document.createElement('div');
  private _timer = 0;
}
