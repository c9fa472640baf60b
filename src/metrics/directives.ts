/**
 * Request directives (server/directives.ts): X-Switchyard-* headers from a caller whose API key
 * may not send them (or on a WebSocket upgrade), ignored and counted by directive. Every series
 * exists from the start (at 0), so an alert can read it.
 */
import { Counter, type Registry } from 'prom-client';
import { DIRECTIVES, type Directive } from './labels.js';

export class DirectiveMetrics {
  private readonly ignored: Counter;

  constructor(registry: Registry) {
    this.ignored = new Counter({
      name: 'switchyard_directives_ignored_total',
      help: 'Request directives (X-Switchyard-* headers) ignored: sent without an API key allowed directives, or on a WebSocket upgrade; by directive (use_upstream, skip_cache, trace)',
      labelNames: ['directive'],
      registers: [registry],
    });
    for (const directive of DIRECTIVES) this.ignored.inc({ directive }, 0);
  }

  recordDirectiveIgnored(directive: Directive): void {
    this.ignored.inc({ directive });
  }
}
