/** The uptime page's webhooks (uptime/notify/webhooks.ts): each delivery's outcome, never a webhook's URL or name. */
import { Counter, type Registry } from 'prom-client';
import { WEBHOOK_OUTCOMES, type WebhookOutcome } from './labels.js';

export class WebhookMetrics {
  private readonly webhooks: Counter;

  constructor(registry: Registry) {
    this.webhooks = new Counter({
      name: 'switchyard_uptime_webhooks_total',
      help: 'Uptime webhook deliveries by outcome: delivered (2xx), retried (an attempt failed, another scheduled), failed (given up), dropped (queue full, webhook removed, shutdown)',
      labelNames: ['outcome'],
      registers: [registry],
    });
    for (const outcome of WEBHOOK_OUTCOMES) this.webhooks.inc({ outcome }, 0);
  }

  recordUptimeWebhook(outcome: WebhookOutcome): void {
    this.webhooks.inc({ outcome });
  }
}
