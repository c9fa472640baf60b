/**
 * Cordons kept in the uptime store (without a shared Redis): across restarts when it is a file. A
 * row that is not a cordon (the file is input too) is left out. A write that fails even in memory
 * rejects. `write` is the room's store operation with its fall-back to memory (index.ts).
 */
import { cordonText, parseCordon, UPSTREAM_NAME, type Cordon, type CordonKeeper } from '../upstream/cordons.js';
import type { UptimeStore } from './store.js';

export function storeCordonKeeper(
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
