/**
 * Opening uptime.store at start: a file that cannot be used (not a database, damaged, newer
 * schema, unwritable) is never fatal: the error is logged naming `uptime.store`, the history is
 * kept in memory, and the file is left as it is for the operator.
 */
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { UptimeStore } from './store.js';

export function openUptimeStore(path: string | null, now: number, log: Logger): UptimeStore {
  if (path === null) return UptimeStore.memory();
  const file = resolve(path);
  try {
    const store = UptimeStore.open(file, now);
    log.info({ store: file }, 'uptime history kept in uptime.store');
    return store;
  } catch (err) {
    log.error(
      { store: file, err },
      'uptime.store cannot be used; uptime history is kept in memory only (the file is left as it is)',
    );
    return UptimeStore.memory();
  }
}
