/**
 * The effective configuration as `switchyard check --print` shows it: every default filled in,
 * secrets masked. Upstream and Redis URLs keep scheme, host and port (an operator must see where
 * they point) and lose credentials, path and query (where providers put API keys); uptime webhook
 * URLs the same (a Slack webhook's path is its key); API keys and
 * header values (upstreams' and the tracing collector's) and the admin token are replaced whole.
 */
import type { Config } from './schema.js';

export const MASK = '***';

/** scheme://host:port with credentials, path and query masked when present. */
export function maskUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return MASK;
  }
  const creds = u.username !== '' || u.password !== '' ? `${MASK}@` : '';
  const rest = (u.pathname !== '/' && u.pathname !== '') || u.search !== '' ? `/${MASK}` : '';
  return `${u.protocol}//${creds}${u.host}${rest}`;
}

/**
 * maskUrl for a value that may not parse as a URL (an error message about it): scheme://host is
 * kept when the value has that shape, credentials, path and query are masked; null otherwise.
 * Such a value often fails to parse because its password holds `/`, `?` or `#`, so where the
 * credentials end cannot be read from the URL grammar: everything up to the last `@` is masked.
 */
export function maskUrlText(raw: string): string | null {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)(.*)$/is.exec(raw);
  if (m === null) return null;
  const [, scheme = '', afterScheme = ''] = m;
  const at = afterScheme.lastIndexOf('@');
  const tail = afterScheme.slice(at + 1);
  const host = /^[^/?#\\]*/.exec(tail)?.[0] ?? '';
  const rest = tail.slice(host.length);
  return `${scheme}${at >= 0 ? `${MASK}@` : ''}${host}${rest !== '' && rest !== '/' ? `/${MASK}` : ''}`;
}

/** A deep copy of the config with every secret masked (the input is frozen and stays as it is). */
export function maskedConfig(config: Config): unknown {
  const copy = JSON.parse(JSON.stringify(config)) as Record<string, unknown> & {
    upstreams: Record<string, unknown>[];
    cache: { redis: string | null };
    rateLimit: { redis: string | null; apiKeys: { key: string }[] };
  };
  for (const u of copy.upstreams) {
    for (const k of ['url', 'ws']) if (typeof u[k] === 'string') u[k] = maskUrl(u[k] as string);
    const headers = u.headers as Record<string, string> | undefined;
    if (headers) for (const h of Object.keys(headers)) headers[h] = MASK;
  }
  if (copy.cache.redis !== null) copy.cache.redis = maskUrl(copy.cache.redis);
  if (copy.rateLimit.redis !== null) copy.rateLimit.redis = maskUrl(copy.rateLimit.redis);
  for (const k of copy.rateLimit.apiKeys) k.key = MASK;
  if (typeof copy.redis === 'string') copy.redis = maskUrl(copy.redis);
  const admin = copy.admin as { token: string | null };
  if (admin.token !== null) admin.token = MASK;
  const tracing = copy.tracing as { endpoint: string | null; headers: Record<string, string> };
  if (tracing.endpoint !== null) tracing.endpoint = maskUrl(tracing.endpoint);
  for (const h of Object.keys(tracing.headers)) tracing.headers[h] = MASK;
  const uptime = copy.uptime as { webhooks: { url: string }[] };
  for (const w of uptime.webhooks) w.url = maskUrl(w.url);
  return copy;
}
