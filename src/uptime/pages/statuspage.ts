/**
 * GET /uptime/api/v2/status.json and /uptime/api/v2/summary.json (SPEC 12.3): the report in
 * Atlassian Statuspage's public shape (`page`, `status { indicator, description }`,
 * `components`, `incidents` (the unresolved ones), `scheduled_maintenances` (upcoming and under
 * way)), so aggregators and tools that read any Statuspage read this one. Built from the same
 * report as the page, so the two never disagree: the indicator is the page's state (the worst of
 * the probes and the open incidents) in Statuspage's words.
 * Ids are stable text: `incident-<n>`, `maintenance-<id>`, `check-<name>`, `upstream-<name>`.
 */
import { createHash } from 'node:crypto';
import { worstImpact, type ComponentLine, type Impact, type IncidentLine, type UptimeReport } from '../view.js';

type Indicator = Impact | 'maintenance';

const DESCRIPTION: Record<Indicator, string> = {
  none: 'All Systems Operational',
  minor: 'Minor Service Outage',
  major: 'Partial System Outage',
  critical: 'Major System Outage',
  maintenance: 'Service Under Maintenance',
};

const COMPONENT_STATUS: Record<ComponentLine['state'], string> = {
  operational: 'operational',
  degraded: 'degraded_performance',
  down: 'major_outage',
  maintenance: 'under_maintenance',
};

/** The page's state in Statuspage's indicator: open incidents' worst impact, or what the probe says. */
export function indicator(r: UptimeReport): Indicator {
  const open = worstImpact(r.incidents.filter((i) => i.endedAt === null).map((i) => i.impact));
  if (r.state === 'maintenance') return open === 'none' ? 'maintenance' : open;
  const probe: Impact = r.state === 'down' ? 'major' : r.state === 'degraded' ? 'minor' : 'none';
  return worstImpact([open, probe]);
}

function pageOf(r: UptimeReport, base: string) {
  return {
    id: createHash('sha256').update(`${r.chainId}/${base}`).digest('hex').slice(0, 12),
    name: r.title,
    url: `${base}/uptime`,
    time_zone: 'Etc/UTC',
    updated_at: r.checkedAt,
  };
}

export function statusJson(r: UptimeReport, base: string): Record<string, unknown> {
  const i = indicator(r);
  return { page: pageOf(r, base), status: { indicator: i, description: DESCRIPTION[i] } };
}

function incidentJson(i: IncidentLine, pageId: string, base: string) {
  const updates = i.updates.map((u, n) => ({
    id: `incident-${i.id}-update-${i.updates.length - n}`,
    status: u.status,
    body: u.message,
    incident_id: `incident-${i.id}`,
    created_at: u.at,
    updated_at: u.at,
    display_at: u.at,
    affected_components: null,
  }));
  const latest = i.updates[0];
  return {
    id: `incident-${i.id}`,
    name: i.summary,
    status: latest?.status ?? (i.endedAt === null ? 'investigating' : 'resolved'),
    created_at: i.startedAt,
    updated_at: latest?.at ?? i.endedAt ?? i.startedAt,
    monitoring_at: i.updates.find((u) => u.status === 'monitoring')?.at ?? null,
    resolved_at: i.endedAt,
    impact: i.impact,
    shortlink: `${base}/uptime/incidents/${i.id}`,
    started_at: i.startedAt,
    page_id: pageId,
    incident_updates: updates,
    components: [],
  };
}

export function summaryJson(r: UptimeReport, base: string): Record<string, unknown> {
  const page = pageOf(r, base);
  const at = Date.parse(r.checkedAt);
  return {
    ...statusJson(r, base),
    components: (r.components ?? []).map((c, position) => ({
      id: `${c.kind}-${c.name}`,
      name: c.kind === 'check' ? c.name : `node ${c.name}`,
      status: COMPONENT_STATUS[c.state],
      created_at: null,
      updated_at: r.checkedAt,
      position: position + 1,
      description: c.kind === 'check' ? `The ${c.name} check` : 'An upstream node',
      showcase: true,
      start_date: null,
      group_id: null,
      page_id: page.id,
      group: false,
      only_show_if_degraded: false,
    })),
    incidents: r.incidents.filter((i) => i.endedAt === null).map((i) => incidentJson(i, page.id, base)),
    scheduled_maintenances: (r.maintenance ?? []).map((m) => ({
      id: `maintenance-${m.id}`,
      name: m.title,
      status: Date.parse(m.start) <= at ? 'in_progress' : 'scheduled',
      created_at: null,
      updated_at: r.checkedAt,
      monitoring_at: null,
      resolved_at: null,
      impact: 'maintenance',
      shortlink: `${base}/uptime`,
      started_at: m.start,
      page_id: page.id,
      incident_updates: [],
      components:
        m.scope === 'all'
          ? []
          : m.scope.map((name) => ({ id: `upstream-${name}`, name: `node ${name}`, status: 'under_maintenance' })),
      scheduled_for: m.start,
      scheduled_until: m.end,
    })),
  };
}
