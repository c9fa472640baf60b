/**
 * The last probe's result as the page shows it (state, checkedAt). The prober keeps it in the
 * store's meta (`lastProbe`), so replicas that do not probe show the same state from the shared
 * image (shared.ts). What the image holds is input: a value that is not one reads as none.
 */
export interface LastProbe {
  t: number;
  reachable: boolean;
  advancing: boolean;
  /** It failed inside a maintenance window: not counted, shown as `maintenance`. */
  excused: boolean;
}

export function lastProbeText(p: LastProbe): string {
  return JSON.stringify({ t: p.t, reachable: p.reachable, advancing: p.advancing, excused: p.excused });
}

export function parseLastProbe(text: string | undefined): LastProbe | null {
  let v: unknown;
  try {
    v = text === undefined || text.length > 200 ? null : JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null) return null;
  const { t, reachable, advancing, excused } = v as Record<string, unknown>;
  if (typeof t !== 'number' || !Number.isSafeInteger(t) || t < 0) return null;
  if (typeof reachable !== 'boolean' || typeof advancing !== 'boolean' || typeof excused !== 'boolean') return null;
  return { t, reachable, advancing, excused };
}
