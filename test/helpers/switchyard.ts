/**
 * Switchyard in-process for tests: ports 0, silent logs, torn down with the test.
 * `startSwitchyard(t, { upstreams: [...] , ...overrides })` waits until it is ready.
 */
import type { Test } from 'tap';
import { App } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { createLogger, type Logger } from '../../src/log/logger.js';
import { get } from './rpc.js';
import { waitFor } from './wait.js';

export interface RunningSwitchyard {
  app: App;
  url: string;
  adminUrl: string;
  close(): Promise<void>;
}

/**
 * Discovery (upstreams[].discover) is off unless a test turns it on for a node: its probes would
 * reach the nodes whose calls tests count (test/upstream/discovery.test.ts turns it on).
 */
export function testConfig(input: Partial<ConfigInput> & Pick<ConfigInput, 'upstreams'>): ConfigInput {
  return {
    ...input,
    upstreams: input.upstreams.map((u) => ({ discover: false, ...u })),
    server: { host: '127.0.0.1', port: 0, wsPort: null, ...input.server },
    admin: { host: '127.0.0.1', port: 0, ...input.admin },
    routing: { headPollMs: 100, ...input.routing },
    rateLimit: { perIp: null, ...input.rateLimit },
    log: { level: 'silent', ...input.log },
    // Uptime history in memory unless a test names a store file: tests never write data/.
    uptime: { store: null, ...input.uptime },
  };
}

export async function startSwitchyard(
  t: Test,
  input: Partial<ConfigInput> & Pick<ConfigInput, 'upstreams'>,
  opts: { waitReady?: boolean; logger?: Logger; configFile?: string; now?: () => number } = {},
): Promise<RunningSwitchyard> {
  const config = validateConfig(testConfig(input));
  // `logger`: a test that reads the log lines passes its own (e.g. createLogger('info', destination)).
  // `configFile`: the file POST /-/reload reads (the test writes it).
  // `now`: the routing clock (breaker cooldowns, head times, call deadlines), for tests that move time themselves.
  const app = await App.start(config, {
    logger: opts.logger ?? createLogger(config.log.level),
    processMetrics: false,
    configFile: opts.configFile,
    now: opts.now,
  });
  const { http, admin } = app.ports;
  const sy: RunningSwitchyard = {
    app,
    url: `http://127.0.0.1:${http}`,
    adminUrl: `http://127.0.0.1:${admin}`,
    close: () => app.close(),
  };
  t.teardown(() => app.close());
  if (opts.waitReady !== false)
    await waitFor('switchyard ready', async () => (await get(`${sy.adminUrl}/ready`)).status === 200);
  return sy;
}
