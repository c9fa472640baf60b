/** Raw HTTP JSON-RPC for tests: exact status, headers and body text, nothing parsed away. */
import { request } from 'undici';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): any;
}

export async function post(
  url: string,
  body: string | object,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) };
}

export async function get(url: string): Promise<RawResponse> {
  const res = await request(url);
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) };
}

let nextId = 1;
/** One call; returns the parsed response object ({result} or {error}). */
export async function call(url: string, method: string, params: unknown[] = []): Promise<any> {
  const r = await post(url, { jsonrpc: '2.0', id: nextId++, method, params });
  return r.json();
}
