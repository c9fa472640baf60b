/**
 * Where JSON-RPC is served, for the HTTP front and WebSocket upgrades alike: which paths, and the
 * API key a request names.
 */
import type { IncomingMessage } from 'node:http';

/** JSON-RPC is served at `/` and at `/key/<api key>`; an X-Api-Key header works on either. */
export function rpcTarget(req: Pick<IncomingMessage, 'url' | 'headers'>): { apiKey?: string } | null {
  const path = (req.url ?? '/').split('?', 1)[0]!;
  const header = req.headers['x-api-key'];
  const headerKey = typeof header === 'string' && header !== '' ? header : undefined;
  if (path === '/') return { apiKey: headerKey };
  const m = /^\/key\/([^/]+)\/?$/.exec(path);
  return m ? { apiKey: decodeKey(m[1]!) } : null;
}

/** The route a request's path matched, as its SERVER span names it; undefined when none did. */
export function routeOf(req: Pick<IncomingMessage, 'url'>): string | undefined {
  const path = (req.url ?? '/').split('?', 1)[0]!;
  if (path === '/') return '/';
  return /^\/key\/[^/]+\/?$/.test(path) ? '/key/{key}' : undefined;
}

/**
 * A key with a malformed percent-escape (`/key/%ff`) is no key anyone was given: it becomes the
 * empty key, which is never configured (keys have at least 16 characters), so it is refused as an
 * unknown key (401) instead of throwing a URIError, which in the WebSocket upgrade handler would
 * end the process.
 */
function decodeKey(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return '';
  }
}
