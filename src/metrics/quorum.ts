/**
 * Quorum reads (SPEC 4.9, routing/quorum.ts): quorum calls by method and how they ended, and the
 * nodes whose answer disagreed with an agreed one. Methods are the call's label (already
 * collapsed), upstreams their configured names.
 */
import { Counter, type Registry } from 'prom-client';
import type { QuorumOutcome } from './labels.js';

export class QuorumMetrics {
  private readonly calls: Counter;
  private readonly dissent: Counter;

  constructor(registry: Registry) {
    this.calls = new Counter({
      name: 'switchyard_quorum_calls_total',
      help: 'Quorum reads (routing.quorum) by method and outcome: agreed, dispute (answers differed), too_few (too few nodes eligible or answering)',
      labelNames: ['method', 'outcome'],
      registers: [registry],
    });
    this.dissent = new Counter({
      name: 'switchyard_upstream_dissent_total',
      help: 'Answers to quorum reads that differed from the answer the other nodes agreed on, by upstream (answers after the client was answered included)',
      labelNames: ['upstream'],
      registers: [registry],
    });
  }

  recordQuorumCall(method: string, outcome: QuorumOutcome): void {
    this.calls.inc({ method, outcome });
  }

  recordDissent(upstream: string): void {
    this.dissent.inc({ upstream });
  }
}
