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

export async function requestAPI<T>(endpoint: 'devices' | 'history' | 'load'): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'hermes', 'api', endpoint);
  const response = await ServerConnection.makeRequest(url, {}, settings);
  const text = await response.text();
  if (!response.ok) {
    throw new ServerConnection.ResponseError(response, text || response.statusText);
  }
  return JSON.parse(text) as T;
}
