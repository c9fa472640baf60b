/**
 * Verified answers (SPEC 4.9, routing/verified.ts): node answers that failed verification, by node
 * and method, and answers that could not be verified, by method. Methods are the call's label
 * (already collapsed), upstreams their configured names.
 */
import { Counter, type Registry } from 'prom-client';

export class VerifyMetrics {
  private readonly wrong: Counter;
  private readonly unverified: Counter;

  constructor(registry: Registry) {
    this.wrong = new Counter({
      name: 'switchyard_upstream_wrong_answers_total',
      help: 'Node answers that were not what was asked or contradicted what they commit to (header hash, transaction hash, transactions or receipts root), by upstream and method: never served nor cached',
      labelNames: ['upstream', 'method'],
      registers: [registry],
    });
    this.unverified = new Counter({
      name: 'switchyard_answers_unverified_total',
      help: 'Node answers that could not be verified (a header member or transaction type the rules do not know), by method: served only when another node returned the same, never cached',
      labelNames: ['method'],
      registers: [registry],
    });
  }

  recordWrongAnswer(upstream: string, method: string): void {
    this.wrong.inc({ upstream, method });
  }

  recordUnverified(method: string): void {
    this.unverified.inc({ method });
  }
}
