/**
 * The one keeper of cordons (SPEC 4.8; upstream/cordons.ts asks a CordonKeeper): `keepCordons`
 * is the only way one is made. With the top-level `redis`, the hash every replica shares
 * (shared-cordons.ts). Without it, a small JSON file of their own beside the uptime store
 * (`cordonFileBeside`: `data/uptime.db` -> `data/uptime.cordons.json`), across restarts of this
 * replica; with no store file configured, this process's memory.
 * The file is input like Redis: one that cannot be read or is not ours is logged naming it, left
 * as it is, and cordons are kept in memory; a write that fails moves them to memory as well (the
 * cordon is still taken, as the uptime store did when it kept them). A file over MAX_FILE_BYTES is
 * not read; an entry that is not a cordon of an upstream name is left out.
 * Carried over: versions before this one kept cordons in a table of the uptime store. Rows found
 * there (handed in as `carried`) are read once: added for names the file does not have, written
 * to the file, and then removed from the store, so a lifted cordon never comes back from it.
 * Owns: choosing where cordons are kept, the file and its format. Refuses: the set in force and
 * its rules (upstream/cordons.ts), the HTTP routes (server/admin-cordons.ts).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, parse, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/registry.js';
import { parseCordon, UPSTREAM_NAME, type Cordon, type CordonKeeper } from '../upstream/cordons.js';
import { SharedCordons } from './shared-cordons.js';
import type { SharedRedis } from './shared-state.js';

/** A cordon file bigger than this is no file of ours (a cordon is under 500 bytes). */
export const MAX_FILE_BYTES = 256 * 1024;
/** The file's `format`: raised if its shape ever changes. */
const FORMAT = 1;

/** Cordons an older version left in the uptime store: rows of name and JSON text, and how to remove them. */
export interface CarriedCordons {
  readonly rows: ReadonlyMap<string, string>;
  clear(): void;
}

export interface KeeperOptions {
  /** The top-level redis (shared by every replica), or null. */
  redis: SharedRedis | null;
  /** The upstream names configured now (the Redis read asks for them first). */
  names: () => readonly string[];
  /** The cordon file (cordonFileBeside), or null: memory. Not used with redis. */
  file: string | null;
  /** Rows of the uptime store's old cordon table, or null. Used with a file only. */
  carried: CarriedCordons | null;
  metrics: Metrics;
  log: Logger;
}

/** Where cordons are kept: Redis, else their file, else memory. */
export function keepCordons(o: KeeperOptions): CordonKeeper {
  if (o.redis !== null) return new SharedCordons(o.redis, o.names, o.metrics);
  if (o.file !== null) return new FileCordons(o.file, o.log, o.carried);
  return new MemoryCordons();
}

/** The cordon file beside an uptime store file: same folder, the store's name without its extension. */
export function cordonFileBeside(store: string): string {
  const { dir, name } = parse(resolve(store));
  return join(dir, `${name}.cordons.json`);
}

/** Kept in this process only: gone with it. */
export class MemoryCordons implements CordonKeeper {
  readonly keptIn: string = 'memory';
  async start(): Promise<void> {}
  async put(): Promise<void> {}
  async drop(): Promise<void> {}
  async close(): Promise<void> {}
}

/** Cordons in a JSON file of their own, written whole (a temporary file renamed over it) on each change. */
export class FileCordons implements CordonKeeper {
  private readonly path: string;
  /** null: the file failed; memory from then on. */
  private file: string | null;
  private readonly all = new Map<string, Cordon>();

  constructor(
    path: string,
    private readonly log: Logger,
    private readonly carried: CarriedCordons | null = null,
  ) {
    this.path = resolve(path);
    this.file = this.path;
  }

  get keptIn(): string {
    return this.file === null ? 'memory' : 'file';
  }

  async start(seen: (all: ReadonlyMap<string, Cordon>) => void): Promise<void> {
    for (const [name, c] of this.readFile()) this.all.set(name, c);
    const old = readRows(this.carried?.rows ?? new Map());
    const added = [...old].filter(([name]) => !this.all.has(name));
    for (const [name, c] of added) this.all.set(name, c);
    if (this.carried !== null && this.carried.rows.size > 0 && (added.length === 0 || this.write())) {
      this.carried.clear();
      this.log.info({ file: this.file, carried: added.length }, 'cordons carried over from the uptime store');
    }
    seen(new Map(this.all));
  }

  async put(name: string, c: Cordon): Promise<void> {
    this.all.set(name, c);
    this.write();
  }

  async drop(name: string): Promise<void> {
    this.all.delete(name);
    this.write();
  }

  async close(): Promise<void> {}

  /** The file's cordons; none when it is absent; none and memory from now on when it cannot be used. */
  private readFile(): Map<string, Cordon> {
    let text: string;
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      return this.unusable(err);
    }
    if (text.length > MAX_FILE_BYTES) return this.unusable(new Error(`over ${MAX_FILE_BYTES} bytes`));
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (err) {
      return this.unusable(err);
    }
    const o = typeof v === 'object' && v !== null ? (v as { format?: unknown; cordons?: unknown }) : {};
    const cordons = o.cordons;
    if (o.format !== FORMAT || typeof cordons !== 'object' || cordons === null || Array.isArray(cordons))
      return this.unusable(new Error(`not a cordon file of format ${FORMAT}`));
    const rows = new Map<string, string>();
    for (const [name, c] of Object.entries(cordons)) rows.set(name, JSON.stringify(c));
    return readRows(rows);
  }

  private unusable(err: unknown): Map<string, Cordon> {
    this.log.error(
      { file: this.path, err },
      'the cordon file cannot be used; cordons are kept in memory only (the file is left as it is)',
    );
    this.file = null;
    return new Map();
  }

  /** Writes the whole set; true when written. A failure is logged once and moves cordons to memory. */
  private write(): boolean {
    if (this.file === null) return false;
    const text = `${JSON.stringify({ format: FORMAT, cordons: Object.fromEntries(this.all) }, null, 2)}\n`;
    const tmp = `${this.file}.tmp`;
    try {
      writeFileSync(tmp, text);
      renameSync(tmp, this.file);
      return true;
    } catch (err) {
      this.log.error({ file: this.file, err }, 'the cordon file failed; cordons are kept in memory only from now on');
      this.file = null;
      return false;
    }
  }
}

/** Stored rows (name, JSON text) as cordons: what is not a cordon of an upstream name is left out. */
function readRows(rows: ReadonlyMap<string, string>): Map<string, Cordon> {
  const out = new Map<string, Cordon>();
  for (const [name, text] of rows) {
    const c = parseCordon(text);
    if (c !== null && UPSTREAM_NAME.test(name)) out.set(name, c);
  }
  return out;
}
