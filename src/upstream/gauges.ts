/**
 * The fleet's gauges: heads and lags published when they move, and the figures that move with every
 * call (in flight, breaker, hold-off, latency) refreshed at each scrape rather than pushed per call.
 */
import type { Metrics } from '../metrics/registry.js';
import type { Upstream } from './node.js';

export function publishHeads(
  metrics: Metrics,
  upstreams: readonly Upstream[],
  lagOf: (u: Upstream) => number,
  head: number,
  finalized: number,
  cordons: { has(name: string): boolean },
): void {
  for (const u of upstreams) {
    const lag = lagOf(u);
    metrics.setUpstreamHead(u.name, u.head);
    metrics.setUpstreamLag(u.name, Number.isFinite(lag) ? lag : -1);
    // Routable for clients: a shadow never is, so it cannot hide an outage of the nodes that are.
    metrics.setUpstreamHealthy(u.name, u.available && !u.shadow);
    metrics.setQuarantined(u.name, u.state === 'quarantined');
    metrics.setUpstreamCordoned(u.name, cordons.has(u.name));
  }
  metrics.setFleetHead(head);
  metrics.setFleetFinalized(finalized);
}

export function collectCallGauges(metrics: Metrics, upstreams: readonly Upstream[]): void {
  for (const u of upstreams) {
    metrics.setUpstreamInFlight(u.name, u.inFlight);
    metrics.setUpstreamHeldInFlight(u.name, u.heldInFlight);
    metrics.setBreakerState(u.name, u.breaker.label);
    metrics.setHeldOff(u.name, u.heldOff);
    metrics.setUpstreamLatency(u.name, u.latencyMs / 1000);
    metrics.setUpstreamHealthy(u.name, u.available && !u.shadow);
  }
}
