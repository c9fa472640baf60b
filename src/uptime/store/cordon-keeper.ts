/**
 * Cordons kept in the uptime store when there is no shared Redis (upstream/cordons.ts asks a
 * CordonKeeper): across restarts when the store is a file. A row that is not a cordon (the file
 * is input too) is left out. A write that fails even in memory rejects.
 */
import { cordonText, parseCordon, UPSTREAM_NAME, type Cordon, type CordonKeeper } from '../../upstream/cordons.js';
import type { UptimeStore } from './store.js';

/** `write` runs a store operation, moving the store to memory if its file fails (index.ts); undefined: failed. */
export function storeCordons(
  store: UptimeStore,
  write: <T>(op: () => T) => T | undefined,
  now: () => number,
): CordonKeeper {
  const set = async (name: string, value: string | null): Promise<void> => {
    let done = false;
    write(() => {
      store.setCordon(name, value, now());
      done = true;
    });
    if (!done) throw new Error('the uptime store could not keep the cordon');
  };
  return {
    get keptIn() {
      return store.persistent ? 'uptime store' : 'memory';
    },
    start: async (seen) => {
      const all = new Map<string, Cordon>();
      for (const [name, text] of write(() => store.cordons()) ?? []) {
        const c = parseCordon(text);
        if (c !== null && UPSTREAM_NAME.test(name)) all.set(name, c);
      }
      seen(all);
    },
    put: (name, c) => set(name, cordonText(c)),
    drop: (name) => set(name, null),
    close: async () => undefined,
  };
}
