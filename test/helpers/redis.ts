/**
 * A real redis-server of the test's own on a free port (no persistence), killed by pid at
 * teardown. `.ci/run` installs the Debian package.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './ports.js';
import type { Test } from 'tap';
import { waitFor } from './wait.js';

export { freePort };

export interface RedisServer {
  url: string;
  port: number;
  /** SIGKILL, by pid. */
  kill(): Promise<void>;
  /** Starts again on the same port (empty: no persistence). */
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: a Redis that keeps its connections but answers nothing. */
  pause(): void;
  resume(): void;
  pid(): number | undefined;
}

/** A real redis-server on a free port, no persistence; killed by pid at teardown. */
export async function startRedis(t: Test): Promise<RedisServer> {
  const port = await freePort();
  let proc: ChildProcess | null = null;
  const start = async (): Promise<void> => {
    const p = spawn(
      '/usr/bin/redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    proc = p;
    let out = '';
    p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr!.resume();
    await waitFor(
      'redis-server ready',
      () =>
        out.includes('Ready to accept connections') ||
        (p.exitCode !== null ? Promise.reject(new Error(`redis exited: ${out.slice(-300)}`)) : false),
      { timeoutMs: 20_000 },
    );
  };
  const kill = async (): Promise<void> => {
    const p = proc;
    if (p === null || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await exited;
  };
  const signal = (sig: NodeJS.Signals): void => {
    if (proc !== null && proc.exitCode === null && proc.signalCode === null) proc.kill(sig);
  };
  await start();
  t.teardown(kill);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    start,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    pid: () => proc?.pid,
  };
}
