// The panel's log section: the Hermes log records every kernel on this machine wrote
// (hm.logs() in each kernel, kept on disk by the kernels), newest first, with level, device
// and kernel filters. Polled with the live load; a poll asks only for the newest records.
import { ILogRecord, ILogs, requestAPI } from './api';
import { cell, heading } from './dom';

/** Records the section shows at most. */
export const LOG_ROWS = 200;
/** Each poll asks again for this much before the newest record shown, in s: a kernel writes
 * its records a moment after it logs them, so a later write may carry an earlier time. */
const OVERLAP_S = 5;
const ANY = 'any';
const LEVELS = [ANY, 'debug', 'info', 'warning', 'error'];

function select(label: string, className: string, options: string[]): HTMLSelectElement {
  const element = document.createElement('select');
  element.className = `jp-mod-styled ${className}`;
  element.title = label;
  setOptions(element, options);
  return element;
}

function setOptions(element: HTMLSelectElement, options: string[]): void {
  const keep = element.value || ANY;
  const all = [ANY, ...options.filter(o => o !== ANY)];
  if (!all.includes(keep)) {
    all.push(keep);
  }
  element.replaceChildren(...all.map(o => {
    const option = document.createElement('option');
    option.value = o;
    option.textContent = o;
    return option;
  }));
  element.value = keep;
}

function clock(seconds: number): string {
  return new Date(seconds * 1000).toLocaleTimeString([], { hour12: false });
}

export class LogSection {
  readonly node = document.createElement('div');

  constructor() {
    this.node.className = 'hermes-log';
    const filters = document.createElement('div');
    filters.className = 'hermes-log-filters';
    for (const [label, control] of [['level', this._level], ['device', this._device],
      ['kernel', this._kernel]] as const) {
      const wrap = document.createElement('label');
      wrap.textContent = `${label} `;
      wrap.appendChild(control);
      control.onchange = () => {
        this._rows = [];
        this._generation += 1; // an answer to the old filters, still on its way, is dropped
        void this.refresh();
      };
      filters.appendChild(wrap);
    }
    this.node.append(this._title, filters, this._body);
  }

  /** Ask for the records newer than the ones shown (all of them after a filter changed). */
  async refresh(): Promise<void> {
    const query: Record<string, string> = { limit: `${LOG_ROWS}` };
    for (const [name, control] of [['level', this._level], ['device', this._device],
      ['kernel', this._kernel]] as const) {
      if (control.value !== ANY) {
        query[name] = control.value;
      }
    }
    if (this._rows.length) {
      query.since = `${this._rows[0].time - OVERLAP_S}`;
    }
    const generation = this._generation;
    try {
      const logs = await requestAPI<ILogs>('logs', query);
      if (generation !== this._generation) {
        return;
      }
      this._merge(logs.records);
      setOptions(this._device, logs.devices);
      setOptions(this._kernel, logs.kernels);
      this._draw(logs.path);
      this.node.dataset.logUpdates = `${Number(this.node.dataset.logUpdates ?? 0) + 1}`;
    } catch (error) {
      const message = heading(`Hermes log: ${(error as Error).message}`);
      message.className = 'hermes-error';
      this._body.replaceChildren(message);
    }
  }

  private _merge(fresh: ILogRecord[]): void {
    const seen = new Set(this._rows.map(r => r.id));
    const rows = [...fresh.filter(r => !seen.has(r.id)), ...this._rows];
    rows.sort((a, b) => b.time - a.time || b.id - a.id);
    this._rows = rows.slice(0, LOG_ROWS);
  }

  private _draw(path: string): void {
    this._title.textContent = `Log: ${this._rows.length} record(s), newest first, of every kernel here (${path})`;
    if (!this._rows.length) {
      const none = document.createElement('p');
      none.textContent = 'No records';
      this._body.replaceChildren(none);
      return;
    }
    const element = document.createElement('table');
    element.className = 'hermes-table hermes-log-table';
    const head = element.createTHead().insertRow();
    ['time', 'level', 'device', 'kernel', 'category', 'notebook', 'message'].forEach(h => cell(head, h, 'th'));
    const body = element.createTBody();
    for (const r of this._rows) {
      const row = body.insertRow();
      row.className = `hermes-log-${r.level.toLowerCase()}`;
      row.dataset.level = r.level;
      [clock(r.time), r.level, r.device, r.kernel, r.category, r.source].forEach(v => cell(row, v));
      const message = cell(row, r.message);
      if (r.detail) {
        const details = document.createElement('details');
        const summary = document.createElement('summary');
        summary.textContent = 'build log';
        const pre = document.createElement('pre');
        pre.textContent = r.detail;
        details.append(summary, pre);
        message.appendChild(details);
      }
    }
    this._body.replaceChildren(element);
  }

  private _rows: ILogRecord[] = [];
  private _generation = 0;
  private _title = heading('Log');
  private _body = document.createElement('div');
  private _level = select('lowest level shown', 'hermes-log-level', LEVELS);
  private _device = select('device', 'hermes-log-device', []);
  private _kernel = select('kernel', 'hermes-log-kernel', []);
}
