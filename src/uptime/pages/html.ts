/** Small HTML helpers of the server-rendered uptime pages (page.ts and its parts all use them; only the leaf figures.ts below). */

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** 2026-11-26 22:10:05 UTC, in a <time> element a machine can read. */
export function utc(t: number): string {
  const iso = new Date(t).toISOString();
  return `<time datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')} UTC</time>`;
}

export { duration } from './figures.js';

/** 2026-11-26 22:10 UTC (to the minute), in a <time> element. */
export function utcMinute(t: number): string {
  const iso = new Date(t).toISOString();
  return `<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

/** 22:10 (UTC, the caller says so). */
export function hhmm(t: number): string {
  return new Date(t).toISOString().slice(11, 16);
}
