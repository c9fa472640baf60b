/**
 * What the pages (pages/), the notices (notify/) and the admin port's uptime routes
 * (server/admin-incidents.ts, server/admin-maintenance.ts) read of the uptime core: the one door
 * through which they import from it (test/architecture/uptime-floors.test.ts holds them to it). The
 * report and its lines, incidents as people tell them and as the desk announces them, the
 * components' lines, maintenance windows and their changes, and the store's incident records,
 * their bounds and impacts.
 * Owns: nothing but the list. Refuses: anything a page or a notice should not depend on (the probe
 * loop, the store's writes, sharing through Redis).
 */
export { incidentLine, iso, type DayLine, type IncidentLine, type UptimeReport } from './report.js';
export { ARCHIVE_PAGE_SIZE, type DeskResult, type IncidentDesk, type IncidentEvent } from './incidents.js';
export type { ComponentLine } from './components.js';
export type { Maintenance, MaintenanceAdmin, MaintenanceChange } from './maintenance.js';
export {
  MAX_MESSAGE,
  MAX_POSTMORTEM_BYTES,
  MAX_TITLE,
  UPDATE_STATUSES,
  isUpdateStatus,
  type IncidentRecord,
  type UpdateStatus,
} from './store/incident-store.js';
export { IMPACTS, isImpact, worstImpact, type Impact } from './store/impact.js';
