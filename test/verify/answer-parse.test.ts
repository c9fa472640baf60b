/**
 * A block is verified from the value its answer was parsed into (upstream/answers.ts hands it on:
 * the answer is not parsed twice), and that reading is exactly as strict as reading the served text
 * again: for a real anvil block written in every way a node (or a liar) may write it (a repeated
 * member either way round, an unknown member, escaped strings and keys, whitespace, an object or a
 * number where a hex string belongs, a fork field null, a member missing) the verdict on the
 * verdict's value equals the verdict on its text, and is the one expected.
 */
import t from 'tap';
import { textOf } from '../../src/jsonrpc/raw.js';
import { classifyBatch, classifyHttp } from '../../src/upstream/answers.js';
import type { Verdict } from '../../src/upstream/classify.js';
import { checkAnswer } from '../../src/verify/answer.js';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { call } from '../helpers/rpc.js';

type Json = Record<string, any>;

/** The members of `block` as JSON text in their order, with `edit` applied to the list of "key":value pieces. */
function written(block: Json, edit: (members: string[]) => string[] = (m) => m): string {
  const members = Object.entries(block).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
  return `{${edit(members).join(',')}}`;
}

/** The member piece of `key` replaced by `piece`. */
function replaced(key: string, piece: string): (members: string[]) => string[] {
  return (members) => members.map((m) => (m.startsWith(`${JSON.stringify(key)}:`) ? piece : m));
}

t.test('a block verified from its answer parse gets the verdict its text gets, whatever its shape', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  await call(anvil.url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: `0x${'22'.repeat(20)}`, value: '0x1' }]);
  const hashes = (await call(anvil.url, 'eth_getBlockByNumber', ['0x1', false])).result as Json;
  const full = (await call(anvil.url, 'eth_getBlockByNumber', ['0x1', true])).result as Json;
  t.equal(hashes.transactions.length, 1, 'a block with one transaction');
  const forgedRoot = `0x${'ab'.repeat(32)}`;
  const cases: [string, Json, string, string][] = [
    ['compact, as anvil writes it', hashes, written(hashes), 'verified'],
    ['with full transactions', full, written(full), 'verified'],
    ['pretty-printed', hashes, JSON.stringify(hashes, null, 2), 'verified'],
    [
      'spaces around colons and commas',
      hashes,
      written(hashes).replaceAll('":', '" : ').replaceAll(',"', ' , "'),
      'verified',
    ],
    [
      'a forged stateRoot first, the real one repeated last (JSON.parse keeps the last)',
      hashes,
      written(hashes, (m) => [`"stateRoot":"${forgedRoot}"`, ...m]),
      'verified',
    ],
    [
      'the real stateRoot first, a forged one repeated last',
      hashes,
      written(hashes, (m) => [...m, `"stateRoot":"${forgedRoot}"`]),
      'wrong',
    ],
    ['the hash repeated, forged last', hashes, written(hashes, (m) => [...m, `"hash":"${forgedRoot}"`]), 'wrong'],
    ['an unknown member', hashes, written(hashes, (m) => [...m, `"fooRoot":"${forgedRoot}"`]), 'unverified'],
    ['an unknown member holding an object', hashes, written(hashes, (m) => [...m, '"extra":{"a":[1]}']), 'unverified'],
    [
      'an escaped digit in a hex member',
      hashes,
      written(hashes, replaced('number', '"number":"\\u0030x1"')),
      'verified',
    ],
    [
      'an escaped key',
      hashes,
      written(hashes, replaced('stateRoot', `"st\\u0061teRoot":${JSON.stringify(hashes.stateRoot)}`)),
      'verified',
    ],
    ['a number where a quantity belongs', hashes, written(hashes, replaced('number', '"number":1')), 'wrong'],
    ['an object where a hash belongs', hashes, written(hashes, replaced('stateRoot', '"stateRoot":{"a":1}')), 'wrong'],
    [
      'an object where the transactions belong',
      hashes,
      written(hashes, replaced('transactions', '"transactions":{}')),
      'wrong',
    ],
    [
      'a transaction hash nested in an array',
      hashes,
      written(hashes, replaced('transactions', `"transactions":[[${JSON.stringify(hashes.transactions[0])}]]`)),
      'wrong',
    ],
    [
      'a fork field null (left out of the header)',
      hashes,
      written(hashes, replaced('requestsHash', '"requestsHash":null')),
      'wrong',
    ],
    ['a member left out', hashes, written(hashes, (m) => m.filter((x) => !x.startsWith('"gasUsed":'))), 'wrong'],
    [
      'an upper-case hash',
      hashes,
      written(hashes, replaced('hash', `"hash":${JSON.stringify(hashes.hash.toUpperCase().replace('0X', '0x'))}`)),
      'verified',
    ],
  ];
  for (const [name, block, text, want] of cases) {
    const params = `["0x1",${block === full}]`;
    const body = `{"jsonrpc":"2.0","id":7,"result":${text}}`;
    const alone = classifyHttp(200, body, 7);
    const batch = (classifyBatch(200, `[${body}]`) as Map<number, Verdict>).get(7)!;
    for (const [how, v] of [
      ['alone', alone],
      ['in a batch', batch],
    ] as const) {
      if (v.kind !== 'result') {
        t.fail(`${name} (${how}): no result`);
        continue;
      }
      t.ok(v.value !== undefined, `${name} (${how}): the answer's parse comes with it`);
      const served = textOf(v.result);
      const fromValue = checkAnswer('eth_getBlockByNumber', params, served, v.value);
      const fromText = checkAnswer('eth_getBlockByNumber', params, served);
      t.same(fromValue, fromText, `${name} (${how}): the same verdict from its value as from its text`);
      t.equal(fromValue.is, want, `${name} (${how}): ${want}`);
    }
  }
});
