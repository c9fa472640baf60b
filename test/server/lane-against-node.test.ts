/**
 * The plain lane reads every request exactly as node:http's own parser does, or hands it over
 * (SPEC 6, issue 42 item 5): the same bytes go to Switchyard with the lane (server.plainLane true)
 * and to Switchyard without it (false: node:http reads every request, the same front behind it),
 * and both must answer alike: the same statuses in the same order (so the same number of requests
 * read) and the same close. Heads are mutated from plain ones with a fixed seed, each followed by
 * a plain request in the same write, so a head read to another length shows in what follows it.
 * A Node upgrade or a reader change that reads a request otherwise fails here.
 */
import type { Server } from 'node:http';
import { connect } from 'node:net';
import t from 'tap';
import { readPlain } from '../../src/server/http-head.js';
import { startAnvil } from '../helpers/anvil.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';

const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}';
const NEXT = '{"jsonrpc":"2.0","id":"next","method":"eth_chainId"}';
const plain = (extra = '', body = BODY): string =>
  `POST / HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const FOLLOWER = plain('', NEXT);
/** Without a byte for this long after the last one, a connection is taken to wait for more. */
const QUIET_MS = 400;
const MUTATED = 600;

const anvil = await startAnvil();
t.teardown(() => anvil.stop());
const config = (plainLane: boolean) => ({
  upstreams: [{ name: 'anvil', url: anvil.url }],
  server: { plainLane, maxBodyBytes: 1_000, keepAliveTimeoutMs: 60_000 },
});
const lane = await startSwitchyard(t, config(true));
const node = await startSwitchyard(t, config(false));

interface Reading {
  /** The status of each answer, in order: one per request read. */
  statuses: number[];
  closed: boolean;
}

/** Statuses of the whole answers in `bytes` (a 1xx has no body; the rest carry a Content-Length). */
function statusesOf(bytes: Buffer): number[] {
  const out: number[] = [];
  let at = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', at);
    if (end < 0) return out;
    const head = bytes.toString('latin1', at, end);
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    const next = end + 4 + (status < 200 ? 0 : Number(length?.[1] ?? bytes.length));
    if (next > bytes.length) return out;
    out.push(status);
    at = next;
  }
}

/**
 * Sends `bytes` in one write (or `bytes` up to `split` first, and the rest once as many answers as
 * `before` came back); what came back once the server closed, or went quiet.
 */
function exchange(
  s: RunningSwitchyard,
  bytes: Buffer,
  quietMs: number,
  split?: { at: number; before: number },
): Promise<Reading> {
  const { port } = new URL(s.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    let quiet: NodeJS.Timeout | undefined;
    const done = (closed: boolean): void => {
      clearTimeout(quiet);
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.destroy();
      resolve({ statuses: statusesOf(Buffer.concat(chunks)), closed });
    };
    const wait = (): void => {
      clearTimeout(quiet);
      quiet = setTimeout(() => done(false), quietMs);
    };
    let rest = split === undefined ? null : bytes.subarray(split.at);
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (rest !== null && statusesOf(Buffer.concat(chunks)).length >= split!.before) {
        socket.write(rest);
        rest = null;
      }
      wait();
    });
    socket.on('error', () => undefined);
    socket.once('close', () => done(true));
    socket.once('connect', () => {
      socket.write(split === undefined ? bytes : bytes.subarray(0, split.at));
      wait();
    });
  });
}

/**
 * The plain requests at the start of `bytes` as the lane reads them: how many, and where what
 * follows them begins.
 */
function plainPrefix(bytes: Buffer): { at: number; before: number } {
  let at = 0;
  let before = 0;
  for (;;) {
    const r = readPlain(bytes.subarray(at), 1_000);
    if (r === null || r.tooLarge || at + r.bodyEnd >= bytes.length) return { at, before };
    at += r.bodyEnd;
    before++;
  }
}

/**
 * Both readings of `bytes`, and whether they agree. A difference is read again with more patience;
 * and when plain requests come first, node:http gets them in a segment of their own, the rest once
 * they are answered: node:http reads a segment whole before it answers, so a malformed request
 * behind good ones in the same segment gets its 400 before their answers are made (and the close
 * loses them), while the lane answers them first, as node:http does when they arrive on their own.
 */
async function compare(bytes: Buffer): Promise<{ lane: Reading; node: Reading; same: boolean }> {
  let last: { lane: Reading; node: Reading; same: boolean } | undefined;
  for (const quiet of [QUIET_MS, 5 * QUIET_MS]) {
    const [l, n] = await Promise.all([exchange(lane, bytes, quiet), exchange(node, bytes, quiet)]);
    last = { lane: l, node: n, same: JSON.stringify(l) === JSON.stringify(n) };
    if (last.same) return last;
  }
  const split = plainPrefix(bytes);
  if (split.before === 0) return last!;
  const [l, n] = await Promise.all([exchange(lane, bytes, 5 * QUIET_MS), exchange(node, bytes, 5 * QUIET_MS, split)]);
  return { lane: l, node: n, same: JSON.stringify(l) === JSON.stringify(n) };
}

t.test('heads node:http reads otherwise than a line reader would, read alike', async (t) => {
  const cases: [string, string][] = [
    [
      'a tab after the Content-Length (node:http: 400)',
      plain().replace(/Content-Length: (\d+)/, 'Content-Length: $1\t'),
    ],
    ['a tab before the Content-Length', plain().replace(/Content-Length: (\d+)/, 'Content-Length:\t$1')],
    ['Proxy-Connection: close, pipelined', plain('Proxy-Connection: close\r\n') + FOLLOWER],
    ['Proxy-Connection: keep-alive, pipelined', plain('Proxy-Connection: keep-alive\r\n') + FOLLOWER],
    ['Connection: keep-alive, close', plain('Connection: keep-alive, close\r\n') + FOLLOWER],
    ['Connection: close, pipelined', plain('Connection: close\r\n') + FOLLOWER],
    ['a Content-Length over maxBodyBytes', plain('', 'x'.repeat(1_001)) + FOLLOWER],
    ['a plain request, pipelined', plain() + FOLLOWER],
  ];
  for (const [why, text] of cases) {
    const r = await compare(Buffer.from(text, 'latin1'));
    t.ok(r.same, `${why}: lane ${JSON.stringify(r.lane)}, node:http ${JSON.stringify(r.node)}`);
  }
});

/** A small deterministic generator (mulberry32), so a failure can be read again. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

t.test(
  `${MUTATED} mutated heads, each followed by a plain request: read alike by the lane and by node:http`,
  async (t) => {
    const next = random(42);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
    const bytes = ['\t', ' ', ':', '\r', '\n', '\r\n', '\x00', '\x7f', '\xe9', 'a', 'A', '-', '_', '0', '9'];
    const lines = [
      'Host: b',
      'Connection: close',
      'Connection: keep-alive',
      'Proxy-Connection: close',
      'Expect: 100-continue',
      'Content-Length: 1',
      'Transfer-Encoding: chunked',
      'X-A:  2 ',
      'cOnTeNt-TyPe: x',
    ];
    const heads = [
      plain(),
      plain('X-Request-Id: abc\r\nConnection: keep-alive\r\nAccept: */*\r\n'),
      `POST /key/abc HTTP/1.1\r\nhost: a\r\ncontent-type: application/json\r\naccept-encoding: gzip\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}`,
    ];
    const texts: string[] = [];
    for (let n = 0; n < MUTATED; n++) {
      let text = pick(heads);
      for (let m = 1 + Math.floor(next() * 2); m > 0; m--) {
        const at = Math.floor(next() * (text.length - BODY.length));
        const what = next();
        if (what < 0.4) text = text.slice(0, at) + pick(bytes) + text.slice(at);
        else if (what < 0.6) text = text.slice(0, at) + text.slice(at + 1);
        else if (what < 0.75) {
          const c = text[at]!;
          text = text.slice(0, at) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + text.slice(at + 1);
        } else {
          const line = text.indexOf('\r\n', at);
          if (line > 0) text = `${text.slice(0, line + 2)}${pick(lines)}\r\n${text.slice(line + 2)}`;
        }
      }
      texts.push(text + FOLLOWER);
    }
    const differ: string[] = [];
    const kinds = new Map<string, number>();
    // 24 at a time: each waits out its quiet period in parallel with the others.
    for (let i = 0; i < texts.length; i += 24) {
      const batch = texts.slice(i, i + 24);
      const results = await Promise.all(batch.map((text) => compare(Buffer.from(text, 'latin1'))));
      results.forEach((r, k) => {
        const kind = `${r.node.statuses.join(',')}${r.node.closed ? ' closed' : ''}`;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
        if (!r.same)
          differ.push(
            `${JSON.stringify(batch[k])}: lane ${JSON.stringify(r.lane)}, node:http ${JSON.stringify(r.node)}`,
          );
      });
    }
    t.same(differ.slice(0, 5), [], `${differ.length} of ${MUTATED} read otherwise`);
    // The mutations made plain requests, refusals and heads node:http waits on, each in numbers.
    const plainAndNext = kinds.get('200,200') ?? 0;
    t.ok(
      plainAndNext > MUTATED / 10 && plainAndNext < (MUTATED * 9) / 10,
      `${plainAndNext} read whole, both requests answered`,
    );
    t.ok(kinds.size > 5, `${kinds.size} kinds of reading: ${JSON.stringify([...kinds].slice(0, 12))}`);
  },
);

t.test('server.plainLane: false sends every request through node:http', async (t) => {
  // node:http's 'request' event fires for each request its parser read, and for no request the lane read.
  const parsed = (s: RunningSwitchyard): (() => number) => {
    let n = 0;
    (s.app as unknown as { listeners: { http: { server: Server } } }).listeners.http.server.on('request', () => n++);
    return () => n;
  };
  const byLane = parsed(lane);
  const byNode = parsed(node);
  const text = Buffer.from(plain() + FOLLOWER);
  const [l, n] = await Promise.all([exchange(lane, text, QUIET_MS), exchange(node, text, QUIET_MS)]);
  t.same(l.statuses, [200, 200], 'plainLane true: both answered');
  t.same(n.statuses, [200, 200], 'plainLane false: both answered');
  t.equal(byLane(), 0, 'plainLane true: node:http parsed none of them');
  t.equal(byNode(), 2, 'plainLane false: node:http parsed both');
});
