/**
 * Hedged reads (SPEC 4.9, routing/hedge.ts): each hedge by what became of it. Every outcome's
 * series reads 0 from the start, so a rate over it is defined before the first hedge.
 */
import { Counter, type Registry } from 'prom-client';
import { HEDGE_OUTCOMES, type HedgeOutcome } from './labels.js';

export class HedgeMetrics {
  private readonly hedges: Counter;

  constructor(registry: Registry) {
    this.hedges = new Counter({
      name: 'switchyard_hedges_total',
      help: 'Hedged reads: a second node asked while the first was late, by outcome (won: its answer served; lost: the first node answered first or it failed; skipped: not sent for want of a token or of another node)',
      labelNames: ['outcome'],
      registers: [registry],
    });
    for (const outcome of HEDGE_OUTCOMES) this.hedges.inc({ outcome }, 0);
  }

  recordHedge(outcome: HedgeOutcome): void {
    this.hedges.inc({ outcome });
  }
}
