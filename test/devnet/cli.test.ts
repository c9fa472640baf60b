// `switchyard devnet` flags: they start the devnet as asked, apply --lag/--stall, print one line per
// node, and bad flags are refused with a message naming the flag before anything starts.

import t from 'tap';
import { runDevnetCommand } from '../../src/devnet/index.js';
import { headOf } from './fixtures/chain.js';

t.test('flags start the devnet and apply faults', async (t) => {
  const lines: string[] = [];
  const devnet = await runDevnetCommand(
    [
      '--nodes',
      '3',
      '--chain-id',
      '1337',
      '--block-time',
      '0',
      '--base-port',
      '0',
      '--control-port',
      '0',
      '--lag',
      '1:2',
      '--stall',
      '2',
      '--slots-in-an-epoch',
      '2',
    ],
    { print: (l) => lines.push(l) },
  );
  t.teardown(() => devnet.stop());
  t.equal(devnet.chainId, 1337);
  t.equal(lines.length, 4, 'one line per node and one for the control API');
  t.match(lines[0], /^node-0 http:\/\/127\.0\.0\.1:\d+ ws:\/\/127\.0\.0\.1:\d+ running$/);
  t.match(lines[1], /^node-1 .* lagging$/);
  t.match(lines[2], /^node-2 .* stalled$/);
  t.match(lines[3], /^control http:\/\/127\.0\.0\.1:\d+$/);
  await devnet.mine(5);
  const [n0, n1, n2] = devnet.nodes();
  t.equal(await headOf(n0!.url), 5);
  t.equal(await headOf(n1!.url), 3);
  t.equal(await headOf(n2!.url), 0);
  // --slots-in-an-epoch 2 makes finalized = head - 4.
  const fin = await fetch(n0!.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: ['finalized', false] }),
  }).then((r) => r.json() as Promise<{ result: { number: string } }>);
  t.equal(Number(fin.result.number), 1);
});

t.test('bad flags are refused before anything starts', async (t) => {
  const bad: [string[], RegExp][] = [
    [['--nodes', '0'], /--nodes/],
    [['--lag', '1'], /--lag: expected INDEX:BLOCKS/],
    [['--lag', '7:1'], /--lag/],
    [['--stall', 'x'], /--stall/],
    [['--block-time', 'fast'], /--block-time/],
    [['--chain-id', '-1'], /--chain-id/],
    [['--unknown'], /unknown/i],
  ];
  for (const [argv, message] of bad)
    await t.rejects(runDevnetCommand(argv, { print: () => undefined }), message, argv.join(' '));
});
