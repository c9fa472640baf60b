/**
 * The open-file limit against what the configuration needs (SPEC 6). Every client connection,
 * upstream connection, Redis connection and store file takes a file descriptor; past the limit
 * accept() fails and every new client with it. Node raises its soft limit to the hard one at
 * start but cannot go beyond, so the hard limit is the operator's (systemd `LimitNOFILE=`,
 * `ulimit -n`, Docker `--ulimit nofile=`). Read from /proc/self/limits (Linux); elsewhere unknown.
 * When the limit is too low for `server.maxConnections`, the cap is lowered to what fits, so a
 * connection past it is closed at once rather than accept() failing for everyone, and a warning
 * says what to raise.
 */
import { readFileSync } from 'node:fs';

/** Descriptors kept for everything that is not a connection: Redis, the uptime store, logs, pipes, the devnet's children. */
export const FD_RESERVE = 64;

/** The soft "Max open files" limit in /proc/self/limits text; null when absent or unlimited. */
export function parseFdLimit(text: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line === undefined ? undefined : /^Max open files\s+(\d+|unlimited)\s/.exec(line)?.[1];
  return soft === undefined || soft === 'unlimited' ? null : Number(soft);
}

/** This process's soft open-file limit, or null when it cannot be read (not Linux). */
export function readFdLimit(): number | null {
  try {
    return parseFdLimit(readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return null;
  }
}

export interface FdBudget {
  /** Descriptors the configuration may use: maxConnections, every upstream's maxConnections and heldConnections, the reserve. */
  needed: number;
  /** The client connection cap in force: server.maxConnections, or less when the limit is lower. */
  maxConnections: number;
  /** The limit is below `needed`: warn. */
  short: boolean;
}

export function fdBudget(
  maxConnections: number,
  upstreamConnections: readonly number[],
  fdLimit: number | null,
): FdBudget {
  const others = upstreamConnections.reduce((a, b) => a + b, 0) + FD_RESERVE;
  const needed = maxConnections + others;
  if (fdLimit === null || fdLimit >= needed) return { needed, maxConnections, short: false };
  return { needed, maxConnections: Math.max(1, fdLimit - others), short: true };
}
