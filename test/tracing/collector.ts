/**
 * A real OTLP/HTTP endpoint for the tracing tests: a node:http server that receives the
 * exporter's POSTs to /v1/traces (JSON encoding) and decodes every span; or one that never
 * answers (a hanging collector). And a proxy in front of a real node that records the
 * `traceparent` of every exchange reaching it (optionally slowing one method down, or refusing
 * batches as a node that takes none does).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Test } from 'tap';
import { request } from 'undici';
import { listenUntilTeardown } from '../helpers/ports.js';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number;
  resource: Record<string, string | number | boolean>;
}

export interface Collector {
  url: string;
  spans: ReceivedSpan[];
  /** Export requests received, with their headers. */
  posts: { path: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type OtlpAttr = { key: string; value: OtlpValue };

function attrs(list: OtlpAttr[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const a of list ?? []) {
    const v = a.value;
    out[a.key] =
      v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue ?? ''));
  }
  return out;
}

/** OTLP/JSON writes ids as hex; an encoder that wrote base64 is read as well. */
function hexId(id: string | undefined): string {
  if (id === undefined || id === '') return '';
  return /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, 'base64').toString('hex');
}

function decode(body: string): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  const doc = JSON.parse(body) as {
    resourceSpans: { resource?: { attributes?: OtlpAttr[] }; scopeSpans: { spans: any[] }[] }[];
  };
  for (const rs of doc.resourceSpans) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans)
      for (const s of ss.spans)
        out.push({
          traceId: hexId(s.traceId),
          spanId: hexId(s.spanId),
          parentSpanId: hexId(s.parentSpanId),
          name: s.name,
          kind: s.kind,
          attributes: attrs(s.attributes),
          links: (s.links ?? []).map((l: any) => ({ traceId: hexId(l.traceId), spanId: hexId(l.spanId) })),
          status: s.status?.code ?? 0,
          resource,
        });
  }
  return out;
}

async function listen(t: Test, server: Server): Promise<string> {
  return `http://127.0.0.1:${await listenUntilTeardown(t, server)}`;
}

export async function startCollector(t: Test): Promise<Collector> {
  const spans: ReceivedSpan[] = [];
  const posts: Collector['posts'] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ path: req.url ?? '', headers: req.headers });
      spans.push(...decode(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  const url = await listen(t, server);
  return { url, spans, posts, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** A collector that takes every export and never answers it. */
export async function startHangingCollector(t: Test): Promise<{ url: string; received: () => number }> {
  let received = 0;
  const server = createServer(() => void received++);
  return { url: await listen(t, server), received: () => received };
}

export interface HeaderProxy {
  url: string;
  /** The traceparent of each exchange that reached the node (undefined: none sent), with its methods. */
  seen: { traceparent: string | undefined; methods: string[] }[];
  /** Answers of this method are held this long before they go back. */
  slow(method: string, ms: number): void;
  /** From now on a batch gets one error object, as a node that takes no batches answers. */
  refuseBatches(): void;
}

const BATCH_REFUSED = JSON.stringify({
  jsonrpc: '2.0',
  id: null,
  error: { code: -32600, message: 'batch requests are not supported' },
});

/** A proxy in front of a real node, recording each exchange's traceparent. */
export async function startHeaderProxy(t: Test, target: string): Promise<HeaderProxy> {
  const seen: HeaderProxy['seen'] = [];
  const slow = new Map<string, number>();
  let refusing = false;
  const timers = new Set<NodeJS.Timeout>();
  t.teardown(() => {
    for (const timer of timers) clearTimeout(timer);
  });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let methods: string[] = [];
      try {
        const parsed = JSON.parse(body) as { method: string } | { method: string }[];
        methods = (Array.isArray(parsed) ? parsed : [parsed]).map((c) => c.method);
      } catch {}
      const tp = req.headers.traceparent;
      seen.push({ traceparent: typeof tp === 'string' ? tp : undefined, methods });
      if (refusing && body.trimStart().startsWith('[')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(BATCH_REFUSED);
      }
      const delay = Math.max(0, ...methods.map((m) => slow.get(m) ?? 0));
      request(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        .then(async (r) => {
          const text = await r.body.text();
          const send = (): void => {
            res.writeHead(r.statusCode, { 'content-type': 'application/json' });
            res.end(text);
          };
          if (delay === 0) return send();
          const timer = setTimeout(() => {
            timers.delete(timer);
            send();
          }, delay);
          timers.add(timer);
        })
        .catch(() => {
          res.writeHead(502);
          res.end();
        });
    });
  });
  const url = await listen(t, server);
  return { url, seen, slow: (method, ms) => void slow.set(method, ms), refuseBatches: () => void (refusing = true) };
}
