/**
 * The one data rule of the page and the badge (SPEC 12.1 "Honest figures", 12.3 "Figures
 * agree"): a window shows a percentage only when at least an hour of it, and at least 1% of its
 * length, was observed; otherwise it says "not enough data" (the badge: "no data", grey). A
 * percentage is floored to two places, so 99.999% never reads 100.00%. A leaf: imports nothing.
 */

export const MIN_OBSERVED_SECONDS = 3_600;
export const MIN_OBSERVED_SHARE = 0.01;

/** The fraction to show for a window of `lengthSeconds`, or null when the rule says too little is known. */
export function shownFraction(fraction: number | null, observedSeconds: number, lengthSeconds: number): number | null {
  if (fraction === null) return null;
  if (observedSeconds < MIN_OBSERVED_SECONDS || observedSeconds < lengthSeconds * MIN_OBSERVED_SHARE) return null;
  return fraction;
}

/** 99.95% (floored to two places); `no data` for null. */
export function percent(fraction: number | null): string {
  return fraction === null ? 'no data' : `${(Math.floor(fraction * 10_000) / 100).toFixed(2)}%`;
}

export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  return h < 48 ? `${h} h ${m % 60} min` : `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** "99.95% of 3 h 2 min observed", or "not enough data (12 min 0 s observed)". */
export function figureText(fraction: number | null, observedSeconds: number, lengthSeconds: number): string {
  const shown = shownFraction(fraction, observedSeconds, lengthSeconds);
  const seen = duration(observedSeconds * 1000);
  return shown === null ? `not enough data (${seen} observed)` : `${percent(shown)} of ${seen} observed`;
}
