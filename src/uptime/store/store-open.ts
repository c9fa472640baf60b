/**
 * The uptime store file failing is never fatal. At start, a file that cannot be used (not a
 * database, damaged, newer schema, unwritable) is logged naming `uptime.store`, the history is
 * kept in memory, and the file is left as it is for the operator. Later, a write that fails moves
 * the store to memory, keeping what it holds (storeWrite).
 */
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Metrics } from '../../metrics/registry.js';
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

/**
 * Runs a store operation; if the file fails, the store moves to memory (keeping what it has),
 * switchyard_uptime_store_persistent reads 0, and the operation runs there. Returns undefined
 * only if it failed in memory too.
 */
export function storeWrite<T>(
  store: UptimeStore,
  op: () => T,
  log: Logger,
  metrics: Pick<Metrics, 'setUptimeStorePersistent'>,
): T | undefined {
  try {
    return op();
  } catch (err) {
    if (!store.persistent) {
      log.error({ err }, 'uptime store operation failed');
      return undefined;
    }
    const file = store.path;
    const kept = store.toMemory();
    metrics.setUptimeStorePersistent(false);
    log.error(
      { store: file, err, historyKept: kept },
      'uptime.store failed; uptime history is kept in memory only from now on',
    );
    try {
      return op();
    } catch (again) {
      log.error({ err: again }, 'uptime store operation failed');
      return undefined;
    }
  }
}
