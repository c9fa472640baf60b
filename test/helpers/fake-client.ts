/**
 * A stand-in for the transport to one node (src/upstream/client.ts) for tests that exercise
 * routing and fleet logic without a network: figures are set by hand and answers are scripted.
 */
import { upstreamSchema, type UpstreamConfig } from '../../src/config/schema.js';
import type { CallTiming, ManyTiming, OutgoingCall, UpstreamClient } from '../../src/upstream/client.js';
import type { Verdict } from '../../src/upstream/classify.js';
import { Breaker } from '../../src/upstream/health.js';
import { Fleet } from '../../src/upstream/fleet.js';
import type { FleetOptions } from '../../src/upstream/membership.js';
import { Metrics } from '../../src/metrics/registry.js';
import { createLogger } from '../../src/log/logger.js';

/** An upstream entry as the config schema builds it (its defaults, nothing hand-copied). */
/** Fleet settings for fleets of fake clients: the chain, a 1 s poll, defaults elsewhere. */
export const TEST_FLEET_OPTIONS: FleetOptions = {
  chainId: 186,
  headPollMs: 1000,
  chainIdCheckMs: 60_000,
  upstreamTimeoutMs: 1000,
  finalityDepth: 64,
  maxHeadJumpBlocks: 1000,
};

export function upstreamConfig(name: string, extra: Partial<UpstreamConfig> = {}): UpstreamConfig {
  return upstreamSchema.parse({ name, url: 'http://127.0.0.1:9', maxConnections: 1, ...extra });
}

export interface SentCall {
  method: string;
  paramsJson: string;
  timeoutMs: number;
}

export class FakeClient implements UpstreamClient {
  readonly name: string;
  readonly breaker = new Breaker();
  inFlight = 0;
  latencyMs = 5;
  calls = 0;
  failures = 0;
  readonly sent: SentCall[] = [];
  /** The size of each exchange made with callMany (calls sent together). */
  readonly exchanges: number[] = [];
  /** Answers, in order; the last one repeats. A function is called with the call. */
  answers: (Verdict | ((c: SentCall) => Verdict | Promise<Verdict>))[] = [{ kind: 'result', result: 'null' }];

  constructor(readonly config: UpstreamConfig) {
    this.name = config.name;
  }

  async call(method: string, paramsJson: string, timeoutMs: number): Promise<CallTiming> {
    const c = { method, paramsJson, timeoutMs };
    this.sent.push(c);
    this.calls++;
    const a = this.answers.length > 1 ? this.answers.shift()! : this.answers[0]!;
    const verdict = typeof a === 'function' ? await a(c) : a;
    return { verdict, ms: 1 };
  }

  /** Calls sent together are scripted like calls sent one by one, in order. */
  async callMany(calls: readonly OutgoingCall[], timeoutMs: number): Promise<ManyTiming> {
    this.exchanges.push(calls.length);
    const each = await Promise.all(calls.map((c) => this.call(c.method, c.paramsJson, timeoutMs)));
    return { verdicts: each.map((t) => t.verdict), ms: 1 };
  }

  /** Its in-flight figure is set by hand: nothing to wait for. */
  async idle(): Promise<void> {}

  async close(): Promise<void> {}
}

/** One node of a fake fleet: its scripted answers, latency figure, head and config. */
export interface FakeNode {
  answers: FakeClient['answers'];
  latencyMs: number;
  head: number;
  config?: Partial<UpstreamConfig>;
}

/**
 * A real Fleet over fake clients, every node up at its head, its clock stopped at `now`; the fleet
 * is stopped at the test's end.
 */
export function fakeFleet(
  t: { teardown: (fn: () => void) => void },
  nodes: Record<string, FakeNode>,
  opts: { options: FleetOptions; now: number; metrics?: Metrics },
): { fleet: Fleet; clients: Map<string, FakeClient> } {
  const clients = new Map<string, FakeClient>();
  const fleet = new Fleet(
    opts.options,
    Object.entries(nodes).map(([name, n]) => upstreamConfig(name, n.config)),
    opts.metrics ?? new Metrics({ processMetrics: false }),
    createLogger('silent'),
    (c) => {
      const f = new FakeClient(c);
      f.latencyMs = nodes[c.name]!.latencyMs;
      f.answers = nodes[c.name]!.answers;
      clients.set(c.name, f);
      return f;
    },
    () => opts.now,
  );
  t.teardown(() => fleet.stop());
  for (const [i, u] of fleet.upstreams.entries()) {
    fleet.markUp(u);
    fleet.observeHeader(u, { number: nodes[u.name]!.head, hash: `0x${i}`, parentHash: '0x0' });
  }
  return { fleet, clients };
}
