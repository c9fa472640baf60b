/**
 * Reading a call's block parameter into a routing requirement.
 * `latest` (or a missing block on a state read) is pinned to the request's head snapshot, so every
 * call of a batch sees the same block and the answer agrees with eth_blockNumber (or, when no
 * routable node has that block, is at the highest one a node has: Fleet.latest). A number needs a
 * node that has it, and so do `safe`/`finalized` (a node at the snapshot head); `pending` sticks to
 * one node per client; `earliest` prefers archive nodes. A read of state at a number (or at
 * `earliest`) also needs a node with state at that block (Requirement.stateAt: its earliest block).
 * Every block parameter takes the same forms: a number, a tag, a block hash, or an EIP-1898 object
 * ({blockHash} / {blockNumber}); a method that takes fewer forms gets the node's own answer.
 * A quorum read (BlockContext.pinTags) asks several nodes, which must answer for one block: there
 * `safe` and `finalized` are pinned to the fleet's finalized height and `earliest` to block 0, and
 * `pending`, which is each node's own, is reported (Resolution.pending) so the read is not one.
 */
import { rpcErrors, type RpcError } from '../jsonrpc/errors.js';
import { MAX_BLOCK_COUNT, type MethodSpec } from '../methods/table.js';
import type { Requirement } from '../routing/select.js';
import { blockNumberOf, heightOf, isHash, toQuantity } from '../jsonrpc/hex.js';

export interface Resolution {
  params: unknown[];
  requirement: Requirement;
  /** Whether params were rewritten (they then must be re-serialised). */
  rewritten: boolean;
  /** A block parameter is `pending` (set only when BlockContext.pinTags is). */
  pending?: true;
}

export interface BlockContext {
  head: number;
  maxLagBlocks: number;
  clientKey: string;
  /** Blocks older than head - recentBlocks are history: archive upstreams are preferred. */
  recentBlocks: number;
  /**
   * A quorum read: the height `safe` and `finalized` are pinned to (the fleet's finalized one,
   * a block every node within finalityDepth of the head calls final, so also safe), and
   * `earliest` is pinned to 0. Absent: tags are sent as they are.
   */
  pinTags?: number;
}

const TAGS = new Set(['latest', 'pending', 'earliest', 'safe', 'finalized']);

type BlockRef = { kind: 'latest' } | { kind: 'tag'; tag: string } | { kind: 'number'; n: number } | { kind: 'hash' };

const LATEST: BlockRef = Object.freeze({ kind: 'latest' });
const BY_HASH: BlockRef = Object.freeze({ kind: 'hash' });

const where = (index: number, member: string): string =>
  member === '' ? `params[${index}]` : `params[${index}].${member}`;

/** `index` and `member` (a filter's fromBlock/toBlock) name the parameter in an error, made only when there is one. */
function readBlockRef(v: unknown, index: number, member = ''): BlockRef | RpcError {
  if (typeof v === 'string') {
    if (v === 'latest') return LATEST;
    if (TAGS.has(v)) return { kind: 'tag', tag: v };
    const n = blockNumberOf(v);
    if (n !== null) return { kind: 'number', n };
    // A bare block hash (execution-apis BlockNumberOrTagOrHash; geth reads it as {blockHash}).
    if (isHash(v)) return BY_HASH;
    return rpcErrors.invalidParams(
      `${where(index, member)}: expected a block number, tag or hash, got ${JSON.stringify(v.slice(0, 80))}`,
    );
  }
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as { blockHash?: unknown; blockNumber?: unknown };
    if (isHash(o.blockHash)) return BY_HASH;
    if (o.blockNumber !== undefined) return readBlockRef(o.blockNumber, index, member);
  }
  return rpcErrors.invalidParams(`${where(index, member)}: expected a block number, tag, hash or {blockHash}`);
}

/**
 * A tag every node may read as another block, as the number all of them are asked for (a quorum
 * read: BlockContext.pinTags); any other reference as it is.
 */
function pinned(ref: BlockRef, ctx: BlockContext): BlockRef {
  if (ctx.pinTags === undefined || ref.kind !== 'tag') return ref;
  if (ref.tag === 'safe' || ref.tag === 'finalized') return { kind: 'number', n: Math.min(ctx.pinTags, ctx.head) };
  if (ref.tag === 'earliest') return { kind: 'number', n: 0 };
  return ref;
}

/** `state`: the method reads state at the block (methods/table.ts): only a node with state there serves it. */
function requirementFor(ref: BlockRef, ctx: BlockContext, state: boolean): Requirement {
  switch (ref.kind) {
    case 'latest':
      return { minHead: ctx.head };
    case 'number': {
      if (ref.n < ctx.head - ctx.recentBlocks)
        return state
          ? { minHead: ref.n, capability: 'archive', stateAt: ref.n }
          : { minHead: ref.n, capability: 'archive' };
      // A block beyond the fleet head is nobody's yet: the most advanced nodes answer (null or error).
      const minHead = Math.min(ref.n, ctx.head);
      return state ? { minHead, stateAt: minHead } : { minHead };
    }
    case 'hash':
      return { maxLag: ctx.maxLagBlocks };
    case 'tag':
      if (ref.tag === 'pending') return sticky(ctx);
      if (ref.tag === 'earliest') return state ? { capability: 'archive', stateAt: 0 } : { capability: 'archive' };
      // safe/finalized: a node at the snapshot head. A node behind it may know an older finalized
      // block than one already answered, and the tag would go backwards between requests.
      return { minHead: ctx.head };
  }
}

/**
 * Pending state (nonces) and transactions: one node per client, the node its transactions were
 * sent to, for as long as that node is in sync. Requiring the snapshot head instead would move the
 * client to another node whenever its own is a moment late with a new block, and the other node's
 * pool may not hold the client's last transaction yet.
 */
const sticky = (ctx: BlockContext): Requirement => ({ maxLag: ctx.maxLagBlocks, stickyKey: ctx.clientKey });

/** A block number as a quantity; the head's text is made once per head, not once per call. */
let lastHead = -1;
let lastHeadHex = '';
function headQuantity(n: number): string {
  if (n !== lastHead) {
    lastHead = n;
    lastHeadHex = toQuantity(n);
  }
  return lastHeadHex;
}

export function resolveBlocks(spec: MethodSpec, params: unknown[], ctx: BlockContext): Resolution | RpcError {
  if (spec.blockCount !== undefined) {
    const bad = checkBlockCount(params[spec.blockCount], spec.blockCount);
    if (bad) return bad;
  }
  if (spec.block !== undefined) {
    const v = params[spec.block];
    if (v === undefined || v === null) {
      // A state read without its block reads `latest`, pinned like it. A method whose block comes
      // first (by number) needs it, and one short of other params too: the node answers those.
      if (spec.block === 0 || params.length < spec.block)
        return { params, requirement: { minHead: ctx.head }, rewritten: false };
      const copy = params.slice();
      copy[spec.block] = headQuantity(ctx.head);
      return { params: copy, requirement: { minHead: ctx.head }, rewritten: true };
    }
    const read = readBlockRef(v, spec.block);
    if ('code' in read) return read;
    const ref = pinned(read, ctx);
    const requirement = requirementFor(ref, ctx, spec.state === true);
    if (ref.kind === 'tag' && ref.tag === 'pending' && ctx.pinTags !== undefined)
      return { params, requirement, rewritten: false, pending: true };
    if (ref.kind !== 'latest' && ref === read) return { params, requirement, rewritten: false };
    const copy = params.slice();
    copy[spec.block] = ref.kind === 'number' ? toQuantity(ref.n) : headQuantity(ctx.head);
    return { params: copy, requirement, rewritten: true };
  }
  if (spec.filterObject !== undefined) return resolveFilter(spec.filterObject, params, ctx);
  if (spec.handling === 'write') return { params, requirement: sticky(ctx), rewritten: false };
  return { params, requirement: { maxLag: ctx.maxLagBlocks }, rewritten: false };
}

/** eth_getLogs: blockHash, or a fromBlock..toBlock range whose `latest` (or missing) ends are pinned to the snapshot. */
function resolveFilter(index: number, params: unknown[], ctx: BlockContext): Resolution | RpcError {
  const f = params[index];
  if (f === null || typeof f !== 'object' || Array.isArray(f)) {
    return rpcErrors.invalidParams(`params[${index}]: expected a filter object`);
  }
  const filter = f as Record<string, unknown>;
  if (filter.blockHash !== undefined) return { params, requirement: { maxLag: ctx.maxLagBlocks }, rewritten: false };
  const copy = { ...filter };
  let rewritten = false;
  let minHead = 0;
  let needsSync = false;
  let pending = false;
  for (const key of ['fromBlock', 'toBlock'] as const) {
    const v = filter[key];
    // A missing end is `latest` (eth_getLogs' default), pinned like it.
    const read = v === undefined || v === null ? LATEST : readBlockRef(v, index, key);
    if ('code' in read) return read;
    const ref = pinned(read, ctx);
    if (ref.kind === 'latest') {
      copy[key] = headQuantity(ctx.head);
      rewritten = true;
      minHead = Math.max(minHead, ctx.head);
    } else if (ref.kind === 'number') {
      if (ref !== read) {
        copy[key] = toQuantity(ref.n);
        rewritten = true;
      }
      minHead = Math.max(minHead, Math.min(ref.n, ctx.head));
    } else {
      needsSync = true;
      if (ref.kind === 'tag' && ref.tag === 'pending') pending = true;
    }
  }
  const requirement: Requirement = { minHead };
  if (needsSync) requirement.maxLag = ctx.maxLagBlocks;
  const marked = pending && ctx.pinTags !== undefined ? { pending: true as const } : {};
  if (!rewritten) return { params, requirement, rewritten: false, ...marked };
  const out = params.slice();
  out[index] = copy;
  return { params: out, requirement, rewritten: true, ...marked };
}

/**
 * A block count must be a quantity from 1 to MAX_BLOCK_COUNT (as geth caps it). Checked here because
 * some nodes do not: anvil 1.7.1 aborts on a count above 2^64, so one call would kill a node.
 */
function checkBlockCount(v: unknown, index: number): RpcError | null {
  // A count longer than 13 hex digits is over the cap anyway.
  const n = typeof v === 'number' ? v : heightOf(v);
  if (n !== null && Number.isInteger(n) && n >= 1 && n <= MAX_BLOCK_COUNT) return null;
  return rpcErrors.invalidParams(`params[${index}]: expected a block count from 1 to ${MAX_BLOCK_COUNT}`);
}
