/**
 * Where a request's CPU goes, by stage, from a `perf record -g` of a Switchyard under load:
 * `node test/bench/perf-stages.mjs perf.data [us-per-request]`. Each sample is given to the stage
 * of the innermost frame that names one (kernel samples by the system call they are in); with the
 * CPU microseconds per request that the bench printed for the same load, each share is also given
 * in microseconds. Record with Switchyard started as
 * `node --perf-prof --interpreted-frames-native-stack dist/main.js`
 * and `perf record -k 1 -F 4000 -g -p PID` while wrk runs, then `perf inject --jit -i perf.data -o
 * perf.jit.data` in a scratch directory (it writes a file per compiled function there; V8 moves and
 * frees compiled code: only its jitdump names frames right; see
 * docs/benchmarks.md#where-the-time-goes).
 * Frames of code V8 has since moved or freed carry stale names: they land in `other`.
 */
import { execFileSync } from 'node:child_process';

const STAGES = [
  ['garbage collection', /Scavenger|MarkCompact|Heap::|GCTracer|ArrayBufferSweeper|ConcurrentMarking|Sweeper/],
  ['metrics', /\/dist\/metrics\/|prom-client/],
  ['log', /pino|\/dist\/log\//],
  ['tracing', /\/dist\/tracing\/|@opentelemetry/],
  [
    'answer write (the plain lane, node:http, http-answer)',
    /\/dist\/server\/http-lane-reply|\/dist\/server\/http-answer|_http_outgoing|Writev|WriteString|clearBuffer|writeGeneric|writable/,
  ],
  // Before Switchyard's own HTTP request below, whose pattern also names the lane's file.
  ['HTTP parse (the plain lane; llhttp, node:http server)', /\/dist\/server\/http-lane\.js|llhttp|_http_server|_http_common|_http_incoming|Parser::|parserOn/],
  ['cache', /\/dist\/cache\/|lru-cache/],
  ['limits', /\/dist\/limits\/|rate-limiter/],
  ['routing and upstream calls (undici)', /\/dist\/routing\/|\/dist\/upstream\/|undici/],
  ['pipeline and method table', /\/dist\/pipeline\/|\/dist\/methods\//],
  ['JSON-RPC parse', /\/dist\/jsonrpc\/|JsonParse|JsonParser/],
  ['front', /\/dist\/server\/front/],
  ['request body read', /\/dist\/server\/body|Readable|TextDecoder|decode/],
  ['HTTP request (ids, CORS, diagnostics)', /\/dist\/server\//],
  ['event loop and microtasks', /uv__io_poll|epoll|processTicksAndRejections|RunMicrotasks|uv_run|task_queues|timers/],
];

/**
 * A kernel sample's stage: the system call it is in, read from its innermost frame that names one
 * (a write made inside a read's callback has both on its stack: the write is the one it is in).
 */
function kernelStage(frames) {
  for (const f of frames) {
    if (/ksys_write|do_writev|sys_write/.test(f)) return 'kernel: write (the answer, the call to a node)';
    if (/ksys_read|sys_read|uv__read/.test(f)) return 'kernel: read';
    if (/epoll/.test(f)) return 'kernel: epoll wait';
  }
  return 'kernel: other';
}

const [file = 'perf.data', us] = process.argv.slice(2);
const out = execFileSync('perf', ['script', '-i', file, '-F', 'comm,tid,ip,sym,dso'], {
  encoding: 'utf8',
  maxBuffer: 1 << 30,
});
const counts = new Map();
let total = 0;
for (const sample of out.split('\n\n')) {
  const lines = sample
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines.length < 2) continue;
  const frames = lines.slice(1);
  total++;
  let stage = frames[0].includes('kernel') ? kernelStage(frames) : undefined;
  for (const f of stage === undefined ? frames : []) {
    const hit = STAGES.find(([, rx]) => rx.test(f));
    if (hit) {
      stage = hit[0];
      break;
    }
  }
  stage ??= 'other';
  counts.set(stage, (counts.get(stage) ?? 0) + 1);
}
process.stdout.write(`${total} samples\n`);
for (const [stage, n] of [...counts].sort((a, b) => b[1] - a[1])) {
  const share = `${((100 * n) / total).toFixed(1)}%`.padStart(6);
  const micro = us === undefined ? '' : `  ~${((Number(us) * n) / total).toFixed(1).padStart(5)} us/req`;
  process.stdout.write(`${share}${micro}  ${stage}\n`);
}
