/**
 * The admin port: writes it refused (server/admin-writes.ts), by reason. Each reason's series
 * reads 0 from the start, so a rate or an alert has a series before the first knock.
 */
import { Counter, type Registry } from 'prom-client';
import { WRITE_REFUSALS, type WriteRefusalReason } from './labels.js';

export class AdminMetrics {
  private readonly refused: Counter;

  constructor(registry: Registry) {
    this.refused = new Counter({
      name: 'switchyard_admin_writes_refused_total',
      help: 'Admin writes refused: no_token and wrong_token (401, admin.token set), not_loopback (403, no token and a peer not on loopback)',
      labelNames: ['reason'],
      registers: [registry],
    });
    for (const reason of WRITE_REFUSALS) this.refused.inc({ reason }, 0);
  }

  recordAdminWriteRefused(reason: WriteRefusalReason): void {
    this.refused.inc({ reason });
  }
}
