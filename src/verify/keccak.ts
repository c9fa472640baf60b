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
