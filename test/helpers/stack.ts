/**
 * A replicated devnet with Switchyard in front of it: the usual fixture for end-to-end tests.
 * Everything is torn down with the test, processes by pid.
 */
import type { Test } from 'tap';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { startSwitchyard, type RunningSwitchyard } from './switchyard.js';

export interface Stack {
  devnet: Devnet;
  sy: RunningSwitchyard;
}

export async function startStack(
  t: Test,
  opts: { nodes?: number; blockTimeMs?: number; config?: Partial<ConfigInput> } = {},
): Promise<Stack> {
  const devnet = await startDevnet({
    nodes: opts.nodes ?? 3,
    chainId: 186,
    blockTimeMs: opts.blockTimeMs ?? 0,
    basePort: 0,
  });
  t.teardown(() => devnet.stop());
  const upstreams = devnet.nodes().map((n) => ({ name: n.name, url: n.url }));
  const sy = await startSwitchyard(t, { upstreams, ...opts.config });
  return { devnet, sy };
}
