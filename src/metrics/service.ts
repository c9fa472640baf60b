/** The process as a whole: what is running, its configuration reloads, and the public uptime page. */
import { Counter, Gauge, type Registry } from 'prom-client';
import { toQuantity } from '../jsonrpc/hex.js';
import { INCIDENT_KINDS, type IncidentKind } from './labels.js';

export const RELOAD_RESULTS = ['success', 'failure'] as const;
/** The uptime probe's two checks, each counted ok or fail. */
export const PROBE_CHECKS = ['reachable', 'advancing'] as const;
export const PROBE_RESULTS = ['ok', 'fail'] as const;

export interface BuildInfo {
  version?: string;
  chainId?: number;
}

const now = (): number => Math.floor(Date.now() / 1000);

export class ServiceMetrics {
  private readonly buildInfo: Gauge;
  private readonly reloads: Counter;
  private readonly reloadOk: Gauge;
  private readonly reloadAt: Gauge;
  private readonly uptimeProbes: Counter;
  private readonly incidentOpen: Gauge;
  private readonly headAge: Gauge;
  private readonly storePersistent: Gauge;
  private readonly ready: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.uptimeProbes = new Counter({
      name: 'switchyard_uptime_probes_total',
      help: 'Uptime page probes by check (reachable, advancing) and result (ok, fail)',
      labelNames: ['check', 'result'],
      registers,
    });
    this.incidentOpen = new Gauge({
      name: 'switchyard_uptime_incident_open',
      help: '1 while an uptime incident of this kind (unreachable, stalled) is open on the public uptime page',
      labelNames: ['kind'],
      registers,
    });
    this.headAge = new Gauge({
      name: 'switchyard_uptime_head_age_seconds',
      help: 'Seconds since the fleet head last rose, as the uptime page reports it',
      registers,
    });
    this.storePersistent = new Gauge({
      name: 'switchyard_uptime_store_persistent',
      help: '1 while uptime history is written to the uptime.store file; 0 when it is kept in memory (store null, or the file failed)',
      registers,
    });
    this.ready = new Gauge({
      name: 'switchyard_ready',
      help: '1 while GET /ready answers 200 (serving, not draining, and an upstream if admin.readyRequiresUpstream), else 0; set at each scrape',
      registers,
    });
    this.buildInfo = new Gauge({
      name: 'switchyard_build_info',
      help: 'Always 1: the running version and the configured chain id (hex, as eth_chainId answers)',
      labelNames: ['version', 'chain_id'],
      registers,
    });
    this.reloads = new Counter({
      name: 'switchyard_config_reloads_total',
      help: 'Configuration reloads (SIGHUP or POST /-/reload), by result (success, failure)',
      labelNames: ['result'],
      registers,
    });
    this.reloadOk = new Gauge({
      name: 'switchyard_config_last_reload_successful',
      help: '1 when the last configuration reload (or the start) succeeded, 0 when the last one was refused',
      registers,
    });
    this.reloadAt = new Gauge({
      name: 'switchyard_config_last_reload_success_timestamp_seconds',
      help: 'Unix time of the last successful configuration load (the start counts)',
      registers,
    });
    for (const result of RELOAD_RESULTS) this.reloads.inc({ result }, 0);
    this.reloadOk.set(1);
    this.reloadAt.set(now());
    for (const check of PROBE_CHECKS) for (const result of PROBE_RESULTS) this.uptimeProbes.inc({ check, result }, 0);
    for (const kind of INCIDENT_KINDS) this.incidentOpen.set({ kind }, 0);
  }

  /** What is running: the one series of switchyard_build_info. */
  setBuildInfo(build: BuildInfo): void {
    this.buildInfo.set({ version: build.version ?? 'unknown', chain_id: toQuantity(build.chainId ?? 0) }, 1);
  }

  /** A configuration load was attempted (SIGHUP, POST /-/reload): the result and, on success, when. */
  recordReload(ok: boolean): void {
    this.reloads.inc({ result: ok ? 'success' : 'failure' });
    this.reloadOk.set(ok ? 1 : 0);
    if (ok) this.reloadAt.set(now());
  }

  recordUptimeProbe(reachable: boolean, advancing: boolean): void {
    this.uptimeProbes.inc({ check: 'reachable', result: reachable ? 'ok' : 'fail' });
    this.uptimeProbes.inc({ check: 'advancing', result: advancing ? 'ok' : 'fail' });
  }

  /** 1 on the kinds of incident open now, 0 on the others. */
  setUptimeIncidents(open: { has(kind: IncidentKind): boolean }): void {
    for (const kind of INCIDENT_KINDS) this.incidentOpen.set({ kind }, open.has(kind) ? 1 : 0);
  }

  setUptimeHeadAge(seconds: number): void {
    this.headAge.set(seconds);
  }

  /** What GET /ready answers now (admin.ts sets it before each scrape). */
  setReady(ready: boolean): void {
    this.ready.set(ready ? 1 : 0);
  }

  setUptimeStorePersistent(persistent: boolean): void {
    this.storePersistent.set(persistent ? 1 : 0);
  }
}
