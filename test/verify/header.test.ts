/**
 * The header hash written in one pass (verify/header.ts) against @ethereumjs/rlp's encoding of the
 * same fields hashed by @noble/hashes: quantities of every length (zero, leading zeros, odd digit
 * counts, one byte either side of 0x80, 32 bytes), extra data of every length class (none, one
 * byte either side of 0x80, 55 and 56 bytes, larger than the reused buffer), both forks' field sets,
 * and members that are not hex of their kind; keccakIs, the comparison of a digest with a hash's
 * text that the block check makes.
 */
import t from 'tap';
import { keccak_256 } from '@noble/hashes/sha3';
import { RLP } from '@ethereumjs/rlp';
import { hexOf } from '../../src/verify/fields.js';
import { headerEncoding, headerHash } from '../../src/verify/header.js';
import { keccakIs, keccakReady } from '../../src/verify/keccak.js';

const ORDER = [
  'parentHash',
  'sha3Uncles',
  'miner',
  'stateRoot',
  'transactionsRoot',
  'receiptsRoot',
  'logsBloom',
  'difficulty',
  'number',
  'gasLimit',
  'gasUsed',
  'timestamp',
  'extraData',
  'mixHash',
  'nonce',
  'baseFeePerGas',
  'withdrawalsRoot',
  'blobGasUsed',
  'excessBlobGas',
  'parentBeaconBlockRoot',
  'requestsHash',
];
const QUANTITIES = new Set([
  'difficulty',
  'number',
  'gasLimit',
  'gasUsed',
  'timestamp',
  'baseFeePerGas',
  'blobGasUsed',
  'excessBlobGas',
]);

function header(over: Record<string, string | undefined> = {}): Record<string, string> {
  const h: Record<string, string | undefined> = {
    parentHash: `0x${'a1'.repeat(32)}`,
    sha3Uncles: `0x${'b2'.repeat(32)}`,
    miner: `0x${'C3'.repeat(20)}`,
    stateRoot: `0x${'d4'.repeat(32)}`,
    transactionsRoot: `0x${'e5'.repeat(32)}`,
    receiptsRoot: `0x${'f6'.repeat(32)}`,
    logsBloom: `0x${'07'.repeat(256)}`,
    difficulty: '0x0',
    number: '0x1b4',
    gasLimit: '0x1c9c380',
    gasUsed: '0x5208',
    timestamp: '0x6560f000',
    extraData: '0x',
    mixHash: `0x${'18'.repeat(32)}`,
    nonce: '0x0000000000000042',
    baseFeePerGas: '0x3b9aca00',
    withdrawalsRoot: `0x${'29'.repeat(32)}`,
    blobGasUsed: '0x20000',
    excessBlobGas: '0x0',
    parentBeaconBlockRoot: `0x${'3a'.repeat(32)}`,
    requestsHash: `0x${'4b'.repeat(32)}`,
    ...over,
  };
  for (const k of Object.keys(h)) if (h[k] === undefined) delete h[k];
  return h as Record<string, string>;
}

/** The reference: each present field's bytes (quantities minimal), RLP-encoded by the library. */
function reference(h: Record<string, string>): string {
  const fields: Uint8Array[] = [];
  for (const k of ORDER) {
    const v = h[k];
    if (v === undefined) continue;
    let digits = v.slice(2);
    if (QUANTITIES.has(k)) {
      digits = digits.replace(/^0+/, '');
      if (digits.length % 2 === 1) digits = `0${digits}`;
    }
    fields.push(Buffer.from(digits, 'hex'));
  }
  return hexOf(keccak_256(RLP.encode(fields)));
}

t.test('equals the library encoding for every length class', async (t) => {
  const cases: [string, Record<string, string | undefined>][] = [
    ['a full Prague header', {}],
    [
      'a London header (no later fields)',
      {
        withdrawalsRoot: undefined,
        blobGasUsed: undefined,
        excessBlobGas: undefined,
        parentBeaconBlockRoot: undefined,
        requestsHash: undefined,
      },
    ],
    [
      'a frontier header',
      {
        baseFeePerGas: undefined,
        withdrawalsRoot: undefined,
        blobGasUsed: undefined,
        excessBlobGas: undefined,
        parentBeaconBlockRoot: undefined,
        requestsHash: undefined,
      },
    ],
    ['zero written with leading zeros', { difficulty: '0x0000' }],
    ['a quantity with leading zeros', { number: '0x00001b4' }],
    ['a one-digit quantity', { number: '0x7' }],
    ['one byte under 0x80', { number: '0x7f' }],
    ['one byte at 0x80', { number: '0x80' }],
    ['an odd digit count of two bytes', { gasUsed: '0x123' }],
    ['a 32-byte quantity', { difficulty: `0x${'f'.repeat(64)}` }],
    ['upper-case digits', { gasLimit: '0x1C9C380', stateRoot: `0x${'AB'.repeat(32)}` }],
    ['one byte of extra data under 0x80', { extraData: '0x01' }],
    ['one byte of extra data at 0x80', { extraData: '0x80' }],
    ['55 bytes of extra data', { extraData: `0x${'5a'.repeat(55)}` }],
    ['56 bytes of extra data', { extraData: `0x${'5a'.repeat(56)}` }],
    ['5000 bytes of extra data (past the reused buffer)', { extraData: `0x${'6b'.repeat(5000)}` }],
  ];
  for (const [name, over] of cases) {
    const h = header(over);
    t.equal(headerHash(h), reference(h), name);
  }
  // The buffer grown for the long one still encodes a small one right.
  t.equal(headerHash(header()), reference(header()), 'a header after the long one');
});

t.test('a member that is not hex of its kind is malformed', async (t) => {
  const bad: [string, Record<string, string>][] = [
    ['a non-digit in the middle of a hash', { stateRoot: `0x${'d4'.repeat(15)}zz${'d4'.repeat(16)}` }],
    ['a non-digit at the end of the bloom', { logsBloom: `0x${'07'.repeat(255)}0g` }],
    ['an odd digit count of data', { extraData: '0x123' }],
    ['a hash one byte short', { parentHash: `0x${'a1'.repeat(31)}` }],
    ['a quantity of 65 digits', { difficulty: `0x1${'0'.repeat(64)}` }],
    ['an empty quantity', { number: '0x' }],
    ['a non-digit in a quantity', { gasUsed: '0x52x8' }],
    ['a non-digit in an odd quantity', { gasUsed: '0xg23' }],
    ['a character past Latin-1', { extraData: '0x12\u20ac4' }],
    // Buffer's hex decoding would read these by their low byte, 0x30 ("0") and 0x61 ("a").
    ['a character past Latin-1 whose low byte is a digit', { stateRoot: `0x${'\u0130'.repeat(64)}` }],
    ['one such character in extra data', { extraData: '0x12\u0161b' }],
    ['one such character in a quantity', { gasLimit: '0x1c9c\u01308' }],
    ['no 0x', { timestamp: '6560f000' }],
  ];
  for (const [name, over] of bad) t.throws(() => headerHash(header(over)), { message: /^malformed / }, name);
  t.throws(
    () => headerHash({ ...header(), number: 7 as unknown as string }),
    { message: 'malformed number' },
    'a number',
  );
});

t.test('keccakIs compares the digest with the text of a hash, byte by byte', async (t) => {
  await keccakReady();
  const h = header();
  const hash = reference(h);
  t.ok(keccakIs(headerEncoding(h), hash), 'the hash');
  t.ok(keccakIs(headerEncoding(h), hash.toUpperCase().replace('0X', '0x')), 'its digits upper-case');
  const last = hash.slice(-1) === '0' ? '1' : '0';
  t.notOk(keccakIs(headerEncoding(h), hash.slice(0, -1) + last), 'its last digit changed');
  t.notOk(keccakIs(headerEncoding(h), `0x${'0'.repeat(64)}`), 'zeros');
  t.notOk(keccakIs(headerEncoding(h), hash.slice(0, -2)), 'a byte short');
  t.notOk(keccakIs(headerEncoding(h), `${hash}00`), 'a byte long');
  t.notOk(keccakIs(headerEncoding(h), `00${hash.slice(2)}`), 'no 0x');
  t.notOk(keccakIs(headerEncoding(h), undefined), 'no hash');
  // A character past ASCII whose low byte is the digit's: not the same text.
  const i = 2 + hash.slice(2).search(/[0-9]/);
  const twisted = hash.slice(0, i) + String.fromCharCode(0x100 + hash.charCodeAt(i)) + hash.slice(i + 1);
  t.notOk(keccakIs(headerEncoding(h), twisted), 'a digit written past Latin-1');
});
