/**
 * uptime.maintenance (SPEC 12.2, 12.3): planned windows announced on the uptime page, each with a
 * scope (`all` or upstream names); while windows cover every node, failed probes count as no data
 * and open no incident (part of schema.ts). The admin port's
 * POST /uptime/maintenance reads the same fields with the same rules (uptime/maintenance.ts).
 */
import { z } from 'zod';

/** Windows in uptime.maintenance; the admin port keeps its own bound (uptime/maintenance.ts). */
export const MAX_CONFIG_WINDOWS = 50;
/** A window's title, as shown on the page. */
export const MAX_WINDOW_TITLE = 200;

/** Upstream names one window's scope lists at most. */
export const MAX_SCOPE_NAMES = 100;
const NAME = /^[a-zA-Z0-9_.-]{1,64}$/;

/** `all`, or the upstream names a window covers (SPEC 12.3); null when `v` is neither. */
export function parseScope(v: unknown): 'all' | string[] | null {
  if (v === undefined || v === 'all') return 'all';
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_SCOPE_NAMES) return null;
  if (!v.every((n) => typeof n === 'string' && NAME.test(n))) return null;
  return [...new Set(v as string[])];
}

/** ISO 8601 date and time with a zone (Z or ±hh:mm): a window means the same instant on every replica. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/** ms since the epoch, or null when `text` is not an ISO 8601 date and time with a zone. */
export function parseInstant(text: unknown): number | null {
  if (typeof text !== 'string' || !INSTANT.test(text)) return null;
  const t = Date.parse(text);
  return Number.isFinite(t) ? t : null;
}

const instant = z.string().refine((s) => parseInstant(s) !== null, {
  error: (iss) =>
    `expected an ISO 8601 date and time with a zone, such as 2026-12-01T02:00:00Z, got ${JSON.stringify(iss.input)}`,
});

export const maintenanceSchema = z
  .array(
    z
      .strictObject({
        start: instant,
        end: instant,
        title: z.string().min(1).max(MAX_WINDOW_TITLE),
        /** `all` (default) or the upstream names the window covers: a failure is excused only when it covers every node. */
        scope: z.union([z.literal('all'), z.array(z.string().regex(NAME)).min(1).max(MAX_SCOPE_NAMES)]).default('all'),
      })
      .refine((w) => parseInstant(w.end)! > parseInstant(w.start)!, {
        error: 'expected end after start: this window ends before (or when) it starts',
        path: ['end'],
        // Judged only once both are instants: a malformed one is refused on its own.
        when: (p) => p.issues.length === 0,
      }),
  )
  .max(MAX_CONFIG_WINDOWS)
  .default([]);

/** A configured window; `scope` absent is `all` (what the schema's default makes it). */
export type MaintenanceConfig = Omit<z.infer<typeof maintenanceSchema>[number], 'scope'> & {
  scope?: 'all' | string[];
};
