/**
 * What people add to incidents, kept in the uptime store's database (store.ts hands over its
 * connection and its write transaction): incidents opened by hand (SPEC 12.2), the updates of any
 * incident (a probe's included), post-mortems (Markdown text), and how long incidents are kept.
 * Owns: the incident_updates table, the source/post-mortem columns, the archive's queries, and
 * pruning. Refuses: judging input (server/admin-incidents.ts), presenting it (page-incident.ts).
 *
 * Bounds (every one documented in docs/uptime-page.md): a title is at most MAX_TITLE characters, a
 * message MAX_MESSAGE, a post-mortem MAX_POSTMORTEM_BYTES; an incident holds at most
 * MAX_UPDATES updates; at most MAX_OPEN_BY_HAND hand-opened incidents are open at once; closed
 * incidents are kept ARCHIVE_KEPT_MS and at most ARCHIVE_MAX of them (the oldest go first).
 */
import type { Db } from './sqlite.js';
import { INCIDENT_KINDS, type IncidentKind } from '../../metrics/labels.js';

export interface Incident {
  id: number;
  /** A probe's kind, or `operator` for one opened by hand. */
  kind: IncidentKind | 'operator';
  startedAt: number;
  endedAt: number | null;
  summary: string;
}
import { DEFAULT_IMPACT, impactOf, type Impact } from './impact.js';

export const UPDATE_STATUSES = ['investigating', 'identified', 'monitoring', 'resolved'] as const;
export type UpdateStatus = (typeof UPDATE_STATUSES)[number];
/** The `kind` of an incident opened by hand; probe incidents have a kind of INCIDENT_KINDS. */
export const OPERATOR_KIND = 'operator' satisfies Incident['kind'];
export type IncidentSource = 'probe' | 'operator';

export const MAX_TITLE = 200;
export const MAX_MESSAGE = 2_000;
/** 64 KiB of UTF-8, as SPEC 12.2 says. */
export const MAX_POSTMORTEM_BYTES = 65_536;
export const MAX_UPDATES = 50;
export const MAX_OPEN_BY_HAND = 20;
export const ARCHIVE_KEPT_MS = 366 * 86_400_000;
export const ARCHIVE_MAX = 5_000;

/** Appended to store.ts's MIGRATIONS. Existing incidents are the probes'. */
export const INCIDENT_MIGRATION = `
  ALTER TABLE incidents ADD COLUMN source TEXT NOT NULL DEFAULT 'probe';
  ALTER TABLE incidents ADD COLUMN postmortem TEXT;
  ALTER TABLE incidents ADD COLUMN postmortem_at INTEGER;
  CREATE TABLE incident_updates (
    id INTEGER PRIMARY KEY AUTOINCREMENT, incident INTEGER NOT NULL, at INTEGER NOT NULL,
    status TEXT NOT NULL, message TEXT NOT NULL);
  CREATE INDEX incident_updates_of ON incident_updates (incident, id);`;

/**
 * Appended to store.ts's MIGRATIONS (SPEC 12.3): an operator incident's impact, a window's scope,
 * and each component's daily tally (components.ts).
 */
export const SCOPE_MIGRATION = `
  ALTER TABLE incidents ADD COLUMN impact TEXT;
  ALTER TABLE maintenance ADD COLUMN scope TEXT;
  CREATE TABLE component_days (
    name TEXT NOT NULL,              -- check:<name> or upstream:<name>
    day INTEGER NOT NULL,            -- UTC day start, ms since the epoch
    probes INTEGER NOT NULL, ok INTEGER NOT NULL,
    PRIMARY KEY (name, day)) WITHOUT ROWID;`;

export interface IncidentUpdate {
  status: UpdateStatus;
  message: string;
  at: number;
}

/** An incident with what people added to it. */
export interface IncidentRecord extends Incident {
  source: IncidentSource;
  /** How bad it is (impact.ts): an operator's choice, or what a probe's kind means. */
  impact: Impact;
  /** Newest first. */
  updates: IncidentUpdate[];
  postmortem: { markdown: string; at: number } | null;
}

/** Why a write changed nothing: the admin route turns it into an answer. */
export type Refusal = { refused: 'unknown' | 'full'; why: string };

interface Row {
  id: number;
  kind: string;
  started_at: number;
  ended_at: number | null;
  summary: string;
  source: string;
  impact: string | null;
  postmortem: string | null;
  postmortem_at: number | null;
}

const COLUMNS = 'id, kind, started_at, ended_at, summary, source, impact, postmortem, postmortem_at';
/** recent()'s incidents (and recentKey()'s): open or started since `?`, newest first, at most `?`. */
const RECENT = 'WHERE ended_at IS NULL OR started_at >= ? ORDER BY started_at DESC, id DESC LIMIT ?';

export function isProbeIncident(i: Incident): i is Incident & { kind: IncidentKind } {
  return (INCIDENT_KINDS as readonly string[]).includes(i.kind);
}

export function isUpdateStatus(s: unknown): s is UpdateStatus {
  return (UPDATE_STATUSES as readonly unknown[]).includes(s);
}

/** What the store lends: its current connection (it changes when a file fails) and its write transaction. */
export interface StoreAccess {
  db(): Db;
  write<T>(now: number, op: () => T): T;
}

export class IncidentLog {
  /** The database recentKey last read, and how many it has seen: a shared image replaces it whole. */
  private keyDb: Db | null = null;
  private keyDbs = 0;

  constructor(private readonly store: StoreAccess) {}

  /** Opens an incident by hand with its first update; `resolved` opens it closed (an account of something over). */
  open(
    title: string,
    status: UpdateStatus,
    message: string,
    now: number,
    impact: Impact = DEFAULT_IMPACT,
  ): IncidentRecord | Refusal {
    return this.store.write(now, () => {
      const db = this.store.db();
      const open = db
        .prepare("SELECT COUNT(*) AS n FROM incidents WHERE source = 'operator' AND ended_at IS NULL")
        .get() as { n: number };
      if (open.n >= MAX_OPEN_BY_HAND)
        return { refused: 'full', why: `${MAX_OPEN_BY_HAND} hand-opened incidents are open: resolve one first` };
      const ended = status === 'resolved' ? now : null;
      const id = Number(
        db
          .prepare(
            "INSERT INTO incidents (kind, started_at, ended_at, summary, source, impact) VALUES (?, ?, ?, ?, 'operator', ?)",
          )
          .run(OPERATOR_KIND, now, ended, title, impact).lastInsertRowid,
      );
      this.insertUpdate(id, status, message, now);
      return this.get(id)!;
    });
  }

  /**
   * Adds an update. On a hand-opened incident `resolved` closes it and any other status reopens
   * it; a probe's incident opens and closes with its check only. `impact`, when given, changes a
   * hand-opened incident's impact (a probe's follows its kind).
   */
  update(id: number, status: UpdateStatus, message: string, now: number, impact?: Impact): IncidentRecord | Refusal {
    return this.store.write(now, () => {
      const before = this.get(id);
      if (before === null) return unknown(id);
      if (before.updates.length >= MAX_UPDATES)
        return { refused: 'full', why: `incident ${id} has ${MAX_UPDATES} updates, the most it keeps` };
      this.insertUpdate(id, status, message, now);
      if (before.source === 'operator') {
        const ended = status === 'resolved' ? (before.endedAt ?? now) : null;
        this.store.db().prepare('UPDATE incidents SET ended_at = ? WHERE id = ?').run(ended, id);
        if (impact !== undefined)
          this.store.db().prepare('UPDATE incidents SET impact = ? WHERE id = ?').run(impact, id);
      }
      return this.get(id)!;
    });
  }

  /** Attaches (or replaces) the post-mortem of an incident. */
  postmortem(id: number, markdown: string, now: number): IncidentRecord | Refusal {
    return this.store.write(now, () => {
      const r = this.store
        .db()
        .prepare('UPDATE incidents SET postmortem = ?, postmortem_at = ? WHERE id = ?')
        .run(markdown, now, id);
      return r.changes === 0 ? unknown(id) : this.get(id)!;
    });
  }

  get(id: number): IncidentRecord | null {
    const row = this.store.db().prepare(`SELECT ${COLUMNS} FROM incidents WHERE id = ?`).get(id) as Row | undefined;
    return row === undefined ? null : this.records([row])[0]!;
  }

  /** The updates of these incidents, newest first, with the incidents' other fields. */
  records(rows: readonly Row[]): IncidentRecord[] {
    const updates = new Map<number, IncidentUpdate[]>();
    if (rows.length > 0) {
      const ids = rows.map((r) => r.id);
      const all = this.store
        .db()
        .prepare(
          `SELECT incident, at, status, message FROM incident_updates WHERE incident IN (${ids.map(() => '?').join(',')}) ORDER BY id DESC`,
        )
        .all(...ids) as { incident: number; at: number; status: UpdateStatus; message: string }[];
      for (const u of all) {
        let list = updates.get(u.incident);
        if (list === undefined) updates.set(u.incident, (list = []));
        list.push({ status: u.status, message: u.message, at: u.at });
      }
    }
    return rows.map((r) => ({
      id: r.id,
      kind: r.kind as Incident['kind'],
      startedAt: r.started_at,
      endedAt: r.ended_at,
      summary: r.summary,
      source: r.source === 'operator' ? 'operator' : 'probe',
      impact: impactOf(r.kind, r.impact),
      updates: updates.get(r.id) ?? [],
      postmortem: r.postmortem === null ? null : { markdown: r.postmortem, at: r.postmortem_at ?? r.started_at },
    }));
  }

  /** Open incidents and those started at or after `since`, newest first, at most `limit`, with their updates. */
  recent(since: number, limit: number): IncidentRecord[] {
    const rows = this.store
      .db()
      .prepare(`SELECT ${COLUMNS} FROM incidents ${RECENT}`)
      .all(since, limit) as unknown as Row[];
    return this.records(rows);
  }

  /**
   * What recent(since, limit) would give, as a short text that changes whenever that would: the
   * same incidents, each with its times, title, post-mortem presence and updates (counted, and the
   * newest's id: within one database updates are only ever added, under ids never used again), and
   * which database it read (an image loaded from another replica replaces the database, and its
   * ids may coincide with different updates). Reads no message or post-mortem text, so a caller
   * can keep what it made of recent() until this changes (report.ts).
   */
  recentKey(since: number, limit: number): string {
    const db = this.store.db();
    if (db !== this.keyDb) {
      this.keyDb = db;
      this.keyDbs++;
    }
    const rows = db
      .prepare(
        `SELECT id, kind, started_at, ended_at, summary, source, impact, postmortem IS NOT NULL,
           (SELECT COUNT(*) || '/' || COALESCE(MAX(u.id), 0) FROM incident_updates u WHERE u.incident = incidents.id)
         FROM incidents ${RECENT}`,
      )
      .all(since, limit)
      .map((r) => Object.values(r));
    return `${this.keyDbs}:${JSON.stringify(rows)}`;
  }

  /** One page of the archive (every incident kept, newest first) and how many there are. */
  archive(offset: number, limit: number): { total: number; incidents: IncidentRecord[] } {
    const db = this.store.db();
    const total = (db.prepare('SELECT COUNT(*) AS n FROM incidents').get() as { n: number }).n;
    const rows = db
      .prepare(`SELECT ${COLUMNS} FROM incidents ORDER BY started_at DESC, id DESC LIMIT ? OFFSET ?`)
      .all(limit, offset) as unknown as Row[];
    return { total, incidents: this.records(rows) };
  }

  private insertUpdate(id: number, status: UpdateStatus, message: string, now: number): void {
    this.store
      .db()
      .prepare('INSERT INTO incident_updates (incident, at, status, message) VALUES (?, ?, ?, ?)')
      .run(id, now, status, message);
  }
}

/**
 * Closed incidents older than ARCHIVE_KEPT_MS go, then the oldest closed ones beyond ARCHIVE_MAX,
 * with their updates. Runs inside the store's compaction transaction.
 */
export function pruneIncidents(db: Db, now: number): void {
  db.prepare('DELETE FROM incidents WHERE ended_at IS NOT NULL AND ended_at < ?').run(now - ARCHIVE_KEPT_MS);
  db.prepare(
    `DELETE FROM incidents WHERE ended_at IS NOT NULL AND id IN (
       SELECT id FROM incidents ORDER BY started_at DESC, id DESC LIMIT -1 OFFSET ?)`,
  ).run(ARCHIVE_MAX);
  db.prepare('DELETE FROM incident_updates WHERE incident NOT IN (SELECT id FROM incidents)').run();
}

function unknown(id: number): Refusal {
  return { refused: 'unknown', why: `no incident ${id}` };
}
