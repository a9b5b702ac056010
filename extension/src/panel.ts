// The "Hermes devices" panel: the server machine's devices and the scheduler's history.
// Every value is written with textContent: nothing from the server is parsed as HTML.
import { Widget } from '@lumino/widgets';

import { IDevice, IHistory, requestAPI } from './api';

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
    this.node.appendChild(this._content);
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
          devices.map(d => [d.id, d.name, gib(d.memory_bytes), `${d.compute_units}`, d.fp64 ? 'yes' : 'no'])
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
}
