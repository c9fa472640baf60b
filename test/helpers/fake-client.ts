/**
 * A stand-in for the transport to one node (src/upstream/client.ts) for tests that exercise
 * routing and fleet logic without a network: figures are set by hand and answers are scripted.
 */
import { upstreamSchema, type UpstreamConfig } from '../../src/config/schema.js';
import type { CallTiming, ManyTiming, OutgoingCall, UpstreamClient } from '../../src/upstream/client.js';
import type { Verdict } from '../../src/upstream/classify.js';
import { Breaker } from '../../src/upstream/health.js';

/** An upstream entry as the config schema builds it (its defaults, nothing hand-copied). */
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

  async close(): Promise<void> {}
}
