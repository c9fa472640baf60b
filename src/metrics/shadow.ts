/**
 * Shadow upstreams (routing/shadow.ts): copies of answered reads sent to shadow nodes, by how their
 * answer compared with the one the client got. Labels: upstream by configured name, method through
 * MethodPolicy.label, outcome from SHADOW_OUTCOMES.
 */
import { Counter, type Registry } from 'prom-client';

/**
 * match / mismatch: the shadow's answer, parsed, equals the client's result / does not (a node error
 * for a result is a mismatch); error: no answer (timeout, transport, 5xx, unreadable); skipped: not
 * sent (routing.shadowMaxInFlight copies in flight, or the shadow not routable, behind the block or
 * out of budget).
 */
export const SHADOW_OUTCOMES = ['match', 'mismatch', 'error', 'skipped'] as const;
export type ShadowOutcome = (typeof SHADOW_OUTCOMES)[number];

export class ShadowMetrics {
  private readonly calls: Counter;

  constructor(registry: Registry) {
    this.calls = new Counter({
      name: 'switchyard_shadow_calls_total',
      help: 'Copies of answered reads for shadow upstreams (upstreams[].shadow), by how the shadow answer compared with the client answer',
      labelNames: ['upstream', 'method', 'outcome'],
      registers: [registry],
    });
  }

  recordShadowCall(upstream: string, method: string, outcome: ShadowOutcome): void {
    this.calls.inc({ upstream, method, outcome });
  }
}
