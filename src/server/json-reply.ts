/**
 * A JSON body as a whole HTTP answer, for the admin and devnet control endpoints: one writeHead
 * with the type and length, then the body. The JSON-RPC front writes its own (server/http-answer.ts):
 * its bodies are already text, and it adds request ids, CORS and gzip.
 */
import type { ServerResponse } from 'node:http';

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
