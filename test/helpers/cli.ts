/** The built CLI (`node dist/main.js`) as a child process, killed by pid at teardown. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';

export const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

export interface Cli {
  proc: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

export function runCli(t: Test, args: string[], env: NodeJS.ProcessEnv = {}): Cli {
  const proc = spawn(process.execPath, [MAIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  return { proc, stdout: () => out, stderr: () => err, exited };
}

/** The ports a running CLI listens on, read from its "switchyard listening" log line. */
export function listeningPorts(stdout: string): { http: number; admin: number } | undefined {
  for (const line of stdout.split('\n')) {
    if (!line.includes('switchyard listening')) continue;
    const rec = JSON.parse(line) as { ports: { http: number; admin: number } };
    return rec.ports;
  }
  return undefined;
}
