// A call's id is a copy of its own, never a view of the body: an id kept past its request (an
// answer waiting its turn on a socket) must not keep a 1 MiB body alive. Measured on the heap
// after a full garbage collection, for each way parseBody finds an id.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import { parseBody } from '../../src/jsonrpc/parse.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapMb = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
};

const pad = (): string => 'x'.repeat(1024 * 1024);
const SHAPES: [string, (k: number) => string][] = [
  ['a plain call', (k) => `{"jsonrpc":"2.0","id":"request-number-${k}","method":"eth_chainId","params":["${pad()}"]}`],
  [
    'members in another order',
    (k) => `{"params":["${pad()}"],"method":"eth_chainId","id":"request-number-${k}","jsonrpc":"2.0"}`,
  ],
  ['a batch', (k) => `[{"jsonrpc":"2.0","id":"request-number-${k}","method":"eth_chainId","params":["${pad()}"]}]`],
  [
    'an invalid request',
    (k) => `{"jsonrpc":"1.0","id":"request-number-${k}","method":"eth_chainId","params":["${pad()}"]}`,
  ],
  [
    'a too-deep request',
    (k) =>
      `{"jsonrpc":"2.0","id":"request-number-${k}","method":"eth_chainId","params":["${pad()}",${'['.repeat(70)}${']'.repeat(70)}]}`,
  ],
];

for (const [name, body] of SHAPES) {
  t.test(`${name}: 24 ids kept from 24 bodies of 1 MiB hold well under 24 MiB`, (t) => {
    const before = heapMb();
    const ids: string[] = [];
    for (let k = 0; k < 24; k++) {
      const parsed = parseBody(body(k), 100);
      if (parsed.kind !== 'calls') throw new Error('expected calls');
      const slot = parsed.slots[0]!;
      ids.push(slot.call ? slot.call.id! : slot.id);
    }
    const grown = heapMb() - before;
    t.equal(ids[7], '"request-number-7"', 'the id is the raw text');
    t.ok(grown < 8, `heap grew ${grown.toFixed(1)} MB`);
    t.end();
  });
}
