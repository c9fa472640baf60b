/**
 * The operator's lines about Switchyard's own listeners: the startup line shows every port, the
 * WebSocket one included (the log redacts `ws` keys, meant for upstream URLs), and a listen failure
 * names the listener and the address it could not take. Upstream URLs stay out of both.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { runCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const UPSTREAM = 'http://127.0.0.1:1/s3cret-path';

function config(dir: string, server: string): string {
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    `
server: { host: 127.0.0.1, ${server} }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ { name: a, url: "${UPSTREAM}", ws: "ws://127.0.0.1:1/s3cret-path" } ]
uptime: { store: null }
log: { level: info }
`,
  );
  return file;
}

t.test('the startup line shows the WebSocket port', async (t) => {
  const cli = runCli(t, ['--config', config(t.testdir(), 'port: 0, wsPort: 0')]);
  const line = await waitFor('listening line', () =>
    cli
      .stdout()
      .split('\n')
      .find((l) => l.includes('switchyard listening')),
  );
  const rec = JSON.parse(line);
  t.ok(Number.isInteger(rec.ports.http) && rec.ports.http > 0, 'http port');
  t.ok(Number.isInteger(rec.ports.admin) && rec.ports.admin > 0, 'admin port');
  t.ok(Number.isInteger(rec.ports.websocket) && rec.ports.websocket > 0, `websocket port (${line})`);
  t.notMatch(cli.stdout(), /s3cret/, 'no upstream URL in the log');
});

t.test('a listen failure names the listener and its address', async (t) => {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => taken.close());
  const port = (taken.address() as { port: number }).port;
  for (const [listener, server] of [
    ['http', `port: ${port}, wsPort: null`],
    ['ws', `port: 0, wsPort: ${port}`],
  ] as const) {
    const cli = runCli(t, ['--config', config(t.testdir(), server)]);
    t.equal(await cli.exited, 1, `${listener}: exit 1`);
    const fatal = cli
      .stdout()
      .split('\n')
      .find((l) => l.includes('could not start'));
    t.ok(fatal, `${listener}: a fatal line`);
    t.match(
      JSON.parse(fatal!).err.message,
      `${listener} listener could not listen on 127.0.0.1 port ${port}: EADDRINUSE`,
      `${listener}: names the listener and address`,
    );
    t.notMatch(cli.stdout(), /s3cret/, 'no upstream URL in the log');
  }
});

t.test("every line names the replica: the host's name, or POD_NAME when set", async (t) => {
  const listening = async (env: NodeJS.ProcessEnv): Promise<Record<string, unknown>[]> => {
    const cli = runCli(t, ['--config', config(t.testdir(), 'port: 0, wsPort: null')], env);
    await waitFor('listening line', () => cli.stdout().includes('switchyard listening'));
    cli.proc.kill('SIGKILL');
    return cli
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  };
  // Only the listening line is sure to be there when the process is killed (the lines after it
  // depend on timing): every line read, at least that one, is checked.
  const plain = await listening({ POD_NAME: '' });
  t.ok(plain.length >= 1, 'the listening line at least');
  t.ok(
    plain.every((l) => l.hostname === hostname()),
    "each carries the host's name",
  );
  const pod = await listening({ POD_NAME: 'switchyard-7d9f-abcde' });
  t.ok(
    pod.every((l) => l.hostname === 'switchyard-7d9f-abcde'),
    'each carries POD_NAME',
  );
});
