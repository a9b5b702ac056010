// Requests to the Hermes server extension, authenticated like every JupyterLab request.
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export interface IDevice {
  id: string;
  kind: string;
  name: string;
  memory_bytes: number;
  memory?: string; // the figure the CLI and %hermes devices show, e.g. "23.5 GiB (host)"
  compute_units: number;
  fp64: boolean;
}

export interface IKernelHistory {
  signature: string;
  name: string; // as the notebook's views name it ("edges: blur5+sobel"); "" when unknown
  device: string;
  runs: number;
  median_ms: number;
  last_recorded: number;
}

export interface ILink {
  device: string;
  h2d_gb_per_s: number;
  d2h_gb_per_s: number;
  h2d_latency_us: number;
}

export interface IHistory {
  path: string;
  runs: number;
  kernels: IKernelHistory[];
  links: ILink[];
}

export interface IDeviceLoad {
  id: string;
  busy_pct: number;
  kernels: number;
  last_run_s_ago: number | null;
  memory: string;
}

export interface ILoad {
  window_s: number;
  devices: IDeviceLoad[];
}

export interface ILogRecord {
  id: number;
  time: number; // epoch seconds
  level: string;
  device: string;
  kernel: string;
  category: string;
  message: string;
  detail: string; // a build log or compiler output, "" when none
  worker: string;
  source: string; // the notebook of the kernel that logged it, else its kernel id or process
}

export interface ILogs {
  path: string;
  records: ILogRecord[]; // newest first
  devices: string[];
  kernels: string[];
}

export type Endpoint = 'devices' | 'history' | 'load' | 'logs';

export async function requestAPI<T>(endpoint: Endpoint, query: Record<string, string> = {}): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const search = new URLSearchParams(query).toString();
  const url = URLExt.join(settings.baseUrl, 'hermes', 'api', endpoint) + (search ? `?${search}` : '');
  const response = await ServerConnection.makeRequest(url, {}, settings);
  const text = await response.text();
  if (!response.ok) {
    throw new ServerConnection.ResponseError(response, text || response.statusText);
  }
  return JSON.parse(text) as T;
}
