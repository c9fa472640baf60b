/**
 * OpenTelemetry's own environment variables (the SDK configuration spec's OTEL_*) fill the blanks
 * of the `tracing` section before it is validated: a key the file (or an embedding program's
 * object) does not write takes the variable's value; a key it writes wins. "Does not write" is told
 * apart from the default by the input itself: the defaults are the schema's, applied after this.
 * Owns: which variables are read, their formats, and what each fills. Refuses: validation (the
 * schema checks what was filled, as it checks the file) and the export itself (tracing/).
 *
 * Turning tracing on: with `tracing.enabled` absent, OTEL_TRACES_EXPORTER naming `otlp` turns it
 * on; an endpoint alone does not (platforms inject OTEL_EXPORTER_OTLP_ENDPOINT into every
 * container, and tracing has a cost an operator opts into). OTEL_SDK_DISABLED=true turns tracing
 * off whatever the file says: it is the spec's switch for "no telemetry from this process".
 * The variables are read only when tracing ends up on; a value they hold is never quoted in an
 * error (endpoints and headers carry credentials).
 */

/** What the variables filled in, or the problems found (one line each, naming the variable). */
export interface OtelEnvResult {
  readonly raw: unknown;
  readonly problems: readonly string[];
}

type Tree = Record<string, unknown>;

/** The exporter's default path, appended to OTEL_EXPORTER_OTLP_ENDPOINT (never to the traces one). */
const TRACES_PATH = 'v1/traces';
/** An HTTP token (RFC 9110): a header name Node would refuse otherwise, at every export. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A header value Node writes: no control characters but tab. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

function isTree(v: unknown): v is Tree {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The spec's rule: an empty value is the same as an unset variable. */
function read(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
}

/** `raw` with the OTEL_* variables applied to its `tracing` section (raw itself is not changed). */
export function applyOtelEnv(raw: unknown, env: NodeJS.ProcessEnv): OtelEnvResult {
  if (!isTree(raw)) return { raw, problems: [] };
  const given = raw.tracing;
  // A section that is not a mapping is the schema's to refuse.
  if (given !== undefined && !isTree(given)) return { raw, problems: [] };
  const file: Tree = given ?? {};
  const problems: string[] = [];
  const tracing: Tree = { ...file };
  if (read(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') tracing.enabled = false;
  else if (!('enabled' in file) && exporters(env).includes('otlp')) tracing.enabled = true;
  if (tracing.enabled !== true) return { raw: tracing.enabled === file.enabled ? raw : { ...raw, tracing }, problems };

  if (!('endpoint' in file)) {
    const endpoint = endpointOf(env, problems);
    if (endpoint !== undefined) tracing.endpoint = endpoint;
  }
  if (!('exportTimeoutMs' in file)) {
    const name = read(env, 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT')
      ? 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'
      : 'OTEL_EXPORTER_OTLP_TIMEOUT';
    const text = read(env, name);
    if (text !== undefined) {
      if (/^\d{1,9}$/.test(text) && Number(text) > 0) tracing.exportTimeoutMs = Number(text);
      else problems.push(`${name}: expected a positive whole number of milliseconds, got ${JSON.stringify(text)}`);
    }
  }
  if (isTree(file.headers) || !('headers' in file))
    tracing.headers = headersOf(env, (file.headers ?? {}) as Tree, problems);
  const attributes = pairs(env, 'OTEL_RESOURCE_ATTRIBUTES', problems, 'attribute') ?? {};
  if (!('serviceName' in file)) {
    const name = read(env, 'OTEL_SERVICE_NAME') ?? attributes['service.name'];
    if (name !== undefined) tracing.serviceName = name;
  }
  // service.name is tracing.serviceName's (filled above); the rest, per key, under the file's.
  delete attributes['service.name'];
  if (isTree(file.resourceAttributes) || !('resourceAttributes' in file))
    tracing.resourceAttributes = { ...attributes, ...((file.resourceAttributes ?? {}) as Tree) };
  return { raw: { ...raw, tracing }, problems };
}

/** OTEL_TRACES_EXPORTER's list (the spec's comma-separated names), lower-cased. */
function exporters(env: NodeJS.ProcessEnv): string[] {
  return (read(env, 'OTEL_TRACES_EXPORTER') ?? '').split(',').map((s) => s.trim().toLowerCase());
}

/**
 * The traces URL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else OTEL_EXPORTER_OTLP_ENDPOINT
 * (a base URL) with `v1/traces` appended to its path, as the OTLP exporter spec says.
 */
function endpointOf(env: NodeJS.ProcessEnv, problems: string[]): string | undefined {
  const traces = read(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (traces !== undefined) return checkedUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces, problems);
  const base = read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (base === undefined) return undefined;
  if (checkedUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base, problems) === undefined) return undefined;
  const u = new URL(base);
  u.pathname = `${u.pathname.endsWith('/') ? u.pathname : `${u.pathname}/`}${TRACES_PATH}`;
  return u.toString();
}

function checkedUrl(name: string, text: string, problems: string[]): string | undefined {
  if (/^https?:\/\/[^\s/]+/i.test(text) && URL.canParse(text)) return text;
  problems.push(`${name}: expected an http(s) URL, got a value that is not one (not shown: it may hold credentials)`);
  return undefined;
}

/**
 * The export's headers: OTEL_EXPORTER_OTLP_HEADERS, then OTEL_EXPORTER_OTLP_TRACES_HEADERS over
 * it, then the file's tracing.headers over both, each per header name (names compared without case).
 */
function headersOf(env: NodeJS.ProcessEnv, file: Tree, problems: string[]): Tree {
  const out: Tree = {};
  const put = (from: Tree): void => {
    for (const [k, v] of Object.entries(from)) {
      for (const have of Object.keys(out)) if (have.toLowerCase() === k.toLowerCase()) delete out[have];
      out[k] = v;
    }
  };
  for (const name of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS']) {
    const h = pairs(env, name, problems, 'header');
    if (h !== undefined) put(h);
  }
  put(file);
  return out;
}

/**
 * A `key1=value1,key2=value2` variable (the W3C Baggage form the spec uses for headers and
 * resource attributes), values percent-decoded; undefined when unset or malformed (a problem is
 * given, naming the entry by its place, never its value).
 */
function pairs(
  env: NodeJS.ProcessEnv,
  name: string,
  problems: string[],
  kind: 'header' | 'attribute',
): Record<string, string> | undefined {
  const text = read(env, name);
  if (text === undefined) return undefined;
  const out: Record<string, string> = {};
  const entries = text.split(',');
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    if (entry.trim() === '') continue;
    const eq = entry.indexOf('=');
    const key = eq < 0 ? '' : entry.slice(0, eq).trim();
    let value: string | undefined;
    try {
      value = eq < 0 ? undefined : decodeURIComponent(entry.slice(eq + 1).trim());
    } catch {
      value = undefined;
    }
    const bad =
      key === '' || value === undefined
        ? 'expected key=value with a percent-encoded value'
        : kind === 'header' && !TOKEN.test(key)
          ? 'expected a header name (an HTTP token)'
          : kind === 'header' && !HEADER_VALUE.test(value)
            ? 'expected a header value without control characters'
            : null;
    if (bad !== null) {
      problems.push(`${name}: entry ${i + 1}: ${bad} (not shown: it may hold a secret)`);
      return undefined;
    }
    out[key] = value!;
  }
  return out;
}
