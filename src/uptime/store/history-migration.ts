/**
 * The schema of what the history and maintenance keep beside the probes (history-store.ts,
 * maintenance-store.ts), appended to store.ts MIGRATIONS. A file of its own, importing nothing,
 * so store.ts can read it whichever module loads first.
 */
/** Admin-made maintenance windows and hourly latency histograms. */
export const HISTORY_MIGRATION = `
  CREATE TABLE maintenance (
    id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, start_at INTEGER NOT NULL, end_at INTEGER NOT NULL);
  CREATE INDEX maintenance_end ON maintenance (end_at);
  CREATE TABLE latency_hours (
    t INTEGER PRIMARY KEY,           -- hour start, ms since the epoch
    probes INTEGER NOT NULL,
    buckets TEXT NOT NULL            -- JSON object: bucket index -> probes in it
  ) WITHOUT ROWID;`;
