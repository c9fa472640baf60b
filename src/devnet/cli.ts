/**
 * `switchyard devnet ...`: turns command-line flags into a running devnet with its faults applied and
 * prints where the nodes are. Exiting and signals belong to main.ts; this only throws on bad flags.
 */
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { startDevnet } from './fleet.js';
import type { Devnet } from './types.js';

export interface DevnetCommandOptions {
  logger?: Logger;
  /** Where the per-node lines go; default stdout. */
  print?: (line: string) => void;
}

export const DEVNET_USAGE = `usage: switchyard devnet [--nodes N] [--chain-id ID] [--block-time SECONDS]
       [--base-port P] [--control-port P] [--host IP] [--slots-in-an-epoch K]
       [--lag I:K]... [--stall I]...`;

function int(flag: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) {
    throw new TypeError(`--${flag}: expected an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function nodeIndex(flag: string, raw: string, nodes: number): number {
  return int(flag, raw, 0, 0, nodes - 1);
}

export async function runDevnetCommand(argv: string[], opts: DevnetCommandOptions = {}): Promise<Devnet> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      nodes: { type: 'string' },
      'chain-id': { type: 'string' },
      'block-time': { type: 'string' },
      'base-port': { type: 'string' },
      'control-port': { type: 'string' },
      host: { type: 'string' },
      'slots-in-an-epoch': { type: 'string' },
      lag: { type: 'string', multiple: true },
      stall: { type: 'string', multiple: true },
    },
  });
  const nodes = int('nodes', values.nodes, 3, 1, 64);
  const blockTime = values['block-time'] === undefined ? 2 : Number(values['block-time']);
  if (!/^\d+(\.\d+)?$/.test(values['block-time'] ?? '2') || !Number.isFinite(blockTime)) {
    throw new TypeError(
      `--block-time: expected seconds >= 0 (0 = only on demand), got ${JSON.stringify(values['block-time'])}`,
    );
  }
  const lags = (values.lag ?? []).map((spec) => {
    const m = /^(\d+):(\d+)$/.exec(spec);
    if (!m) throw new TypeError(`--lag: expected INDEX:BLOCKS such as 1:3, got ${JSON.stringify(spec)}`);
    return { index: nodeIndex('lag', m[1]!, nodes), blocks: int('lag', m[2]!, 0, 0, 1_000_000) };
  });
  const stalls = (values.stall ?? []).map((raw) => nodeIndex('stall', raw, nodes));

  const devnet = await startDevnet({
    nodes,
    chainId: int('chain-id', values['chain-id'], 186, 1, Number.MAX_SAFE_INTEGER),
    blockTimeMs: Math.round(blockTime * 1000),
    basePort: int('base-port', values['base-port'], 18545, 0, 65535 - nodes + 1),
    controlPort: int('control-port', values['control-port'], 18540, 0, 65535),
    slotsInAnEpoch: int('slots-in-an-epoch', values['slots-in-an-epoch'], 4, 1, 1_000_000),
    ...(values.host !== undefined ? { host: values.host } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  try {
    for (const { index, blocks } of lags) await devnet.lag(index, blocks);
    for (const index of stalls) await devnet.stall(index);
  } catch (err) {
    await devnet.stop();
    throw err;
  }

  const print = opts.print ?? ((line: string) => void process.stdout.write(`${line}\n`));
  for (const n of devnet.nodes()) print(`${n.name} ${n.url} ${n.wsUrl} ${n.state}`);
  if (devnet.controlUrl) print(`control ${devnet.controlUrl}`);
  return devnet;
}
