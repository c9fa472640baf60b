/**
 * Which nodes make up the fleet across a reload: which stay as they are, which are rebuilt under
 * the same name, which come and which go, and when a node that went may be closed. The fleet
 * (fleet.ts) applies the result; this file never touches a node's state.
 * Owns: the fleet's settings from a Config, the membership change, what a member's probe reports to
 * the fleet, closing a removed node once idle.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Config, UpstreamConfig } from '../config/schema.js';
import type { Logger } from 'pino';
import type { Header } from './heads.js';
import type { Upstream } from './node.js';
import type { ProbeSink } from './probe.js';
import type { WrongAnswerLimits } from './quarantine.js';

export interface FleetOptions {
  chainId: number;
  headPollMs: number;
  chainIdCheckMs: number;
  upstreamTimeoutMs: number;
  finalityDepth: number;
  maxHeadJumpBlocks: number;
  /**
   * Blocks a head no other node confirms may run beyond the chain's pace since the last confirmed
   * head (belief.ts); absent = 4, the config default.
   */
  headSlackBlocks?: number;
  /** Circuit breaker settings for every upstream (routing.breaker); absent = the Breaker's defaults. */
  breaker?: { threshold: number; cooldownMs: number };
  /** routing.holdOffMaxMs: the longest a node that said "too many requests" is held off (holdoff.ts). */
  holdOffMaxMs?: number;
  /** routing.verify: so many wrong answers within windowMs quarantine a node for quarantineMs; absent = quarantine.ts WRONG_ANSWERS. */
  wrongAnswers?: WrongAnswerLimits;
}

export function fleetOptions(cfg: Config): FleetOptions {
  return {
    chainId: cfg.chainId,
    headPollMs: cfg.routing.headPollMs,
    chainIdCheckMs: cfg.routing.chainIdCheckMs,
    upstreamTimeoutMs: cfg.routing.upstreamTimeoutMs,
    finalityDepth: cfg.cache.finalityDepth,
    maxHeadJumpBlocks: cfg.routing.maxHeadJumpBlocks,
    headSlackBlocks: cfg.routing.headSlackBlocks,
    breaker: { threshold: cfg.routing.breaker.failureThreshold, cooldownMs: cfg.routing.breaker.cooldownMs },
    holdOffMaxMs: cfg.routing.holdOffMaxMs,
    wrongAnswers: {
      quarantineAfter: cfg.routing.verify.quarantineAfter,
      windowMs: cfg.routing.verify.windowMs,
      quarantineMs: cfg.routing.verify.quarantineMs,
    },
  };
}

/** The fleet's nodes under a new configuration, in its order. */
export interface MemberChange {
  next: Upstream[];
  /** Running nodes whose entry did not change: the same objects, with their in-flight calls. */
  kept: Upstream[];
  /** New objects: new nodes, and nodes whose entry changed. */
  built: Upstream[];
  /** Running objects not in `next`: removed nodes, and the old objects of rebuilt ones. */
  removed: Upstream[];
}

/**
 * `build(c, same)`: the object for entry c; `same` is the running node at the same address
 * (url and ws) under the same name, whose state the new object takes over: another weight, tags
 * or pool size leave it the same node, still routable. Starting it as 'connecting' left a gap until
 * its first poll, and re-weighting every upstream at once answered calls with "none healthy"
 * meanwhile (its chain id is checked again on its first poll all the same). If a build throws,
 * the objects already built are closed and the error goes on: nothing running has changed.
 */
export function changeMembers(
  running: readonly Upstream[],
  configs: readonly UpstreamConfig[],
  build: (c: UpstreamConfig, same?: Upstream) => Upstream,
): MemberChange {
  const byName = new Map(running.map((u) => [u.name, u]));
  const change: MemberChange = { next: [], kept: [], built: [], removed: [] };
  try {
    for (const c of configs) {
      const old = byName.get(c.name);
      if (old !== undefined && isDeepStrictEqual(old.config, c)) {
        change.next.push(old);
        change.kept.push(old);
        byName.delete(c.name);
        continue;
      }
      const u = build(c, old !== undefined && old.config.url === c.url && old.config.ws === c.ws ? old : undefined);
      change.next.push(u);
      change.built.push(u);
    }
  } catch (err) {
    for (const u of change.built) void u.client.close();
    throw err;
  }
  change.removed = [...byName.values()];
  return change;
}

/** The fleet's transitions a probe's observations drive (Fleet, fleet.ts). */
export interface FleetTransitions {
  markUp(u: Upstream): void;
  markDown(u: Upstream, why?: string): void;
  markLate(u: Upstream, why: string): void;
  observeHeader(u: Upstream, header: Header, observedAt?: number): void;
  observeFinalized(u: Upstream, n: number): void;
  finalizedUnsupported(u: Upstream): void;
  quarantine(u: Upstream, got: number | null): void;
}

/** A member's probe reports each observation to the fleet's transition for it (fleet.ts). */
export function reportTo(fleet: FleetTransitions, u: Upstream, log: Logger): ProbeSink {
  return {
    up: () => {
      log.debug({ upstream: u.name, state: 'healthy' }, 'probe: state');
      fleet.markUp(u);
    },
    down: (why) => {
      log.debug({ upstream: u.name, state: 'down', why }, 'probe: state');
      fleet.markDown(u, why);
    },
    late: (why) => fleet.markLate(u, why),
    header: (h, observedAt) => {
      log.debug({ upstream: u.name, head: h.number }, 'probe: head');
      fleet.observeHeader(u, h, observedAt);
    },
    finalized: (n) => fleet.observeFinalized(u, n),
    finalizedUnsupported: () => fleet.finalizedUnsupported(u),
    quarantined: (got) => fleet.quarantine(u, got),
    crashed: (err) => log.error({ upstream: u.name, err }, 'head poll crashed'),
  };
}

/** How long a removed node's calls may keep it open; each is bounded by its own deadline well before. */
export const REMOVED_NODE_GRACE_MS = 60_000;

/** Closes a removed node once its last in-flight call ended (or after `graceMs`). */
export async function closeWhenIdle(u: Upstream, graceMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs).unref()));
  await Promise.race([u.client.idle(), grace]);
  clearTimeout(timer);
  await u.client.close();
}
