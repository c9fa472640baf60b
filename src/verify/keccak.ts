/**
 * keccak-256 for verification: hash-wasm's WebAssembly keccak, about ten times @noble/hashes'
 * JavaScript one on a block header (test/bench/verify.ts), which is what keeps verifying a block
 * within a miss's budget. Its instance is made asynchronously at start; until it is there (the
 * first moments of the process) @noble/hashes answers, with the same digests.
 */
import { keccak_256 } from '@noble/hashes/sha3';
import { createKeccak, type IHasher } from 'hash-wasm';

let wasm: IHasher | null = null;
const made: Promise<void> = createKeccak(256).then(
  (h) => {
    wasm = h;
  },
  () => undefined,
);

/** The keccak-256 digest of `bytes`, as lowercase "0x…" text. */
export function keccakHex(bytes: Uint8Array): string {
  if (wasm === null) return `0x${Buffer.from(keccak_256(bytes)).toString('hex')}`;
  wasm.init();
  wasm.update(bytes);
  return `0x${wasm.digest('hex')}`;
}

/** Each hex digit pair's byte, indexed by (first char code << 7) | second; -1 for a pair that is not two digits. */
const PAIR = new Int16Array(1 << 14).fill(-1);
for (const a of '0123456789abcdefABCDEF')
  for (const b of '0123456789abcdefABCDEF') PAIR[(a.charCodeAt(0) << 7) | b.charCodeAt(0)] = Number.parseInt(a + b, 16);

/**
 * Whether the keccak-256 digest of `bytes` is `hash` ("0x" and 64 hex digits, either case):
 * the digest compared byte by byte with the text's pairs, no hex text made (a header check's
 * last step; writing the digest as text was a tenth of that check).
 */
export function keccakIs(bytes: Uint8Array, hash: unknown): boolean {
  if (typeof hash !== 'string' || hash.length !== 66 || hash.charCodeAt(0) !== 0x30 || hash.charCodeAt(1) !== 0x78)
    return false;
  const d = keccak(bytes);
  for (let i = 0, at = 2; i < 32; i++, at += 2) {
    const c = hash.charCodeAt(at);
    const e = hash.charCodeAt(at + 1);
    if ((c | e) > 127 || PAIR[(c << 7) | e] !== d[i]) return false;
  }
  return true;
}

/** The keccak-256 digest of `bytes`. */
export function keccak(bytes: Uint8Array): Uint8Array {
  if (wasm === null) return keccak_256(bytes);
  wasm.init();
  wasm.update(bytes);
  return wasm.digest('binary');
}

/** Resolves once the WebAssembly instance is there (benchmarks wait for it). */
export function keccakReady(): Promise<void> {
  return made;
}
