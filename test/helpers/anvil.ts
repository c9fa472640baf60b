/**
 * A plain anvil node on a free port, for tests that need one real node without the devnet's
 * replication. Killed by pid at teardown.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
export const ANVIL_BIN = join(dirname(require.resolve('@foundry-rs/anvil-linux-amd64/package.json')), 'bin', 'anvil');

/** anvil's first default account (public test key). */
export const DEV_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
export const DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

export interface AnvilNode {
  url: string;
  port: number;
  pid: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export async function startAnvil(opts: { chainId?: number; port?: number; args?: string[] } = {}): Promise<AnvilNode> {
  const args = [
    '--port',
    String(opts.port ?? 0),
    '--host',
    '127.0.0.1',
    '--chain-id',
    String(opts.chainId ?? 186),
    ...(opts.args ?? []),
  ];
  const proc = spawn(ANVIL_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`anvil did not start: ${out.slice(-500)}`)), 30_000);
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /Listening on [\d.]+:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`anvil exited with ${code}: ${out.slice(-500)}`));
    });
  });
  proc.stdout!.resume();
  proc.stderr!.resume();
  const stop = async (): Promise<void> => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await exited;
    live.delete(proc);
  };
  return { url: `http://127.0.0.1:${port}`, port, pid: proc.pid!, proc, stop };
}
