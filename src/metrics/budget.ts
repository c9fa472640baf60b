/**
 * Upstream budgets (limits/budget.ts): calls a node's budget turned away, and the tokens left in
 * each budget. Only budgeted upstreams have these series: a node without a budget has none, not a 0.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export class BudgetMetrics {
  private readonly exhausted: Counter;
  private readonly remaining: Gauge;

  constructor(registry: Registry) {
    this.exhausted = new Counter({
      name: 'switchyard_upstream_budget_exhausted_total',
      help: "Calls a node's budget (upstreams[].rateLimit) turned away: each went to another node, or got UPSTREAM_BUDGET when none had budget",
      labelNames: ['upstream'],
      registers: [registry],
    });
    this.remaining = new Gauge({
      name: 'switchyard_upstream_budget_remaining',
      help: "Calls left in each budgeted node's current window, as this replica last saw it",
      labelNames: ['upstream'],
      registers: [registry],
    });
  }

  /** A budgeted upstream's counter starts at 0 when its budget is made. */
  declareBudget(upstream: string): void {
    this.exhausted.inc({ upstream }, 0);
  }

  recordBudgetExhausted(upstream: string): void {
    this.exhausted.inc({ upstream });
  }

  /** Every budget's tokens left, before a scrape: series of upstreams with no budget (any more) go. */
  setBudgetsRemaining(budgets: Iterable<readonly [upstream: string, tokens: number]>): void {
    this.remaining.reset();
    for (const [upstream, tokens] of budgets) this.remaining.set({ upstream }, tokens);
  }
}
