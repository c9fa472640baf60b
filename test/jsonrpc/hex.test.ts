/**
 * The hex parsers (src/jsonrpc/hex.ts) as one table: each input against every parser, so the rules
 * for heights (lenient, exact, at most 13 digits) and for block number parameters (no leading
 * zeros, at most 16 digits) are written down side by side and cannot drift apart again; and the
 * one quantity formatter, whose output every parser reads back.
 */
import t from 'tap';
import {
  blockNumberOf,
  heightInText,
  heightOf,
  isAddress,
  isHash,
  isHexText,
  parseQuantity,
  toQuantity,
} from '../../src/jsonrpc/hex.js';

const H64 = `0x${'ab'.repeat(32)}`;
const A40 = `0x${'Cd'.repeat(20)}`;

// input, heightOf, blockNumberOf, isHexText (for strings)
const QUANTITIES: [unknown, number | null, number | null, boolean | null, string][] = [
  ['0x0', 0, 0, true, 'zero'],
  ['0x1a', 26, 26, true, 'lower case'],
  ['0x1A', 26, 26, true, 'upper case digits'],
  ['0x01', 1, null, true, 'a leading zero: a height as read, not a block number parameter'],
  ['0x00', 0, null, true, 'zero written twice'],
  ['0x', null, null, true, 'no digits: empty data, no number'],
  ['0X1a', null, null, false, 'upper-case X'],
  ['1a', null, null, false, 'no 0x'],
  ['0x1g', null, null, false, 'not hex'],
  [' 0x1', null, null, false, 'whitespace'],
  ['0xfffffffffffff', 2 ** 52 - 1, 2 ** 52 - 1, true, '13 digits: the largest height'],
  ['0x10000000000000', null, 2 ** 52, true, '14 digits: no height, still a (uint64) block number'],
  ['0xffffffffffffffff', null, 2 ** 64, true, '16 digits: the largest block number (approximate above 2^53)'],
  ['0x10000000000000000', null, null, true, '17 digits: over 64 bits'],
  [26, null, null, null, 'a JSON number is not a quantity'],
  [null, null, null, null, 'null'],
];

t.test('quantities: heightOf and blockNumberOf', async (t) => {
  for (const [v, height, block, hexText, why] of QUANTITIES) {
    t.equal(heightOf(v), height, `heightOf(${JSON.stringify(v)}): ${why}`);
    t.equal(blockNumberOf(v), block, `blockNumberOf(${JSON.stringify(v)}): ${why}`);
    if (typeof v === 'string') t.equal(isHexText(v), hexText, `isHexText(${JSON.stringify(v)})`);
  }
});

t.test('parseQuantity reads a JSON result text by the height rule', async (t) => {
  t.equal(parseQuantity('"0xba"'), 186);
  t.equal(parseQuantity(' "0x01"\n'), 1, 'whitespace around, a leading zero');
  t.equal(parseQuantity('"0x10000000000000"'), null, 'too large to be exact');
  t.equal(parseQuantity('186'), null, 'a number');
  t.equal(parseQuantity('"'), null, 'one quote');
  t.equal(parseQuantity('null'), null);
});

t.test('hashes and addresses', async (t) => {
  t.equal(isHash(H64), true);
  t.equal(isHash(H64.toUpperCase().replace('0X', '0x')), true, 'any case');
  t.equal(isHash(H64.slice(0, -2)), false, '31 bytes');
  t.equal(isHash(`${H64}00`), false, '33 bytes');
  t.equal(isHash(A40), false, 'an address is no hash');
  t.equal(isAddress(A40), true, 'mixed case, checksum not judged');
  t.equal(isAddress(A40.slice(0, -1)), false, '39 digits');
  t.equal(isAddress(H64), false, 'a hash is no address');
  t.equal(isAddress(42), false);
});

t.test('heightInText: the block an answer belongs to, from its raw text', async (t) => {
  t.equal(heightInText('{"hash":"0x1","blockNumber":"0x1f","blockHash":"0x2"}'), 31, 'a transaction or receipt');
  t.equal(heightInText('{"hash":"0x1","blockNumber":null}'), null, 'pending: no block');
  t.equal(heightInText('"0x02f8"'), null, 'a raw transaction names no block');
  t.equal(heightInText('{"number":"0x20","hash":"0x3"}'), null, "a block's own number only counts when asked");
  t.equal(heightInText('{"number":"0x20","hash":"0x3"}', true), 32, 'with orNumber');
  t.equal(heightInText('{"blockNumber":"0x10000000000000"}'), null, 'too large to be a height');
});

t.test(
  'toQuantity: lowercase digits, no leading zeros, numbers and bigints alike, read back by every parser',
  async (t) => {
    t.equal(toQuantity(0), '0x0');
    t.equal(toQuantity(26), '0x1a');
    t.equal(toQuantity(2 ** 52 - 1), '0xfffffffffffff');
    t.equal(toQuantity(10n ** 18n), '0xde0b6b3a7640000', 'a wei amount as a bigint');
    for (const n of [0, 1, 26, 255, 4096, 2 ** 52 - 1]) {
      t.equal(heightOf(toQuantity(n)), n, `heightOf reads ${n} back`);
      t.equal(blockNumberOf(toQuantity(n)), n, `blockNumberOf reads ${n} back`);
    }
  },
);
