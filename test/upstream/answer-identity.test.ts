/**
 * An answer must be the answer to the call it came for: a single call's answer carries its id
 * (classifyHttp), and a block, transaction or receipt carries the number or hash asked
 * (methods/identity.ts). Table-driven, no network.
 */
import t from 'tap';
import { classifyHttp } from '../../src/upstream/answers.js';
import { answerCarries, identityOf, identityOfText } from '../../src/methods/identity.js';

const H = `0x${'ab'.repeat(32)}`;
const OTHER = `0x${'cd'.repeat(32)}`;

t.test('a single answer with another id is a bad body; an error may carry null', async (t) => {
  const rows: [string, string][] = [
    ['{"jsonrpc":"2.0","id":7,"result":"0x1"}', 'result'],
    ['{"jsonrpc":"2.0","id":8,"result":"0x1"}', 'retry bad_body'],
    ['{"jsonrpc":"2.0","id":"7","result":"0x1"}', 'retry bad_body'],
    ['{"jsonrpc":"2.0","result":"0x1"}', 'retry bad_body'],
    ['{"jsonrpc":"2.0","id":null,"result":"0x1"}', 'retry bad_body'],
    ['{"jsonrpc":"2.0","id":null,"error":{"code":3,"message":"execution reverted"}}', 'node-error'],
    ['{"jsonrpc":"2.0","id":9,"error":{"code":3,"message":"execution reverted"}}', 'retry bad_body'],
  ];
  for (const [body, want] of rows) {
    const v = classifyHttp(200, body, 7);
    t.equal(v.kind === 'retry' ? `retry ${v.reason}` : v.kind, want, body);
  }
});

t.test('what an answer must carry', async (t) => {
  const block = (n: string, hash = H): string =>
    `{"hash":"${hash}","number":"${n}","transactions":[{"number":"0x99"}]}`;
  const rows: [string, unknown[], string, boolean][] = [
    ['eth_getBlockByNumber', ['0x5', false], block('0x5'), true],
    ['eth_getBlockByNumber', ['0x5', false], block('0x6'), false],
    ['eth_getBlockByNumber', ['0x5', false], block('0x05'), true],
    ['eth_getBlockByNumber', ['0x5', false], 'null', true],
    ['eth_getBlockByNumber', ['0x5', false], '"0x5"', false],
    ['eth_getBlockByNumber', ['0x5', false], '{"number":"0x6","number":"0x5"}', true],
    ['eth_getBlockByNumber', ['0x5', false], '{"number":"0x5","number":"0x6"}', false],
    ['eth_getBlockByNumber', ['earliest', false], block('0x0'), true],
    ['eth_getBlockByHash', [H, false], block('0x5', H.toUpperCase().replace('0X', '0x')), true],
    ['eth_getBlockByHash', [H, false], block('0x5', OTHER), false],
    ['eth_getTransactionByHash', [H], `{"hash":"${H}"}`, true],
    ['eth_getTransactionByHash', [H], `{"hash":"${OTHER}"}`, false],
    ['eth_getTransactionReceipt', [H], `{"transactionHash":"${H}"}`, true],
    ['eth_getTransactionReceipt', [H], `{"transactionHash":"${OTHER}","hash":"${H}"}`, false],
  ];
  for (const [method, params, result, want] of rows) {
    const id = identityOf(method, params);
    t.ok(id !== null, `${method} ${JSON.stringify(params)} is checked`);
    t.equal(answerCarries(id!, result), want, `${method} ${JSON.stringify(params)} answered ${result.slice(0, 60)}`);
  }
  t.equal(identityOf('eth_getBlockByNumber', ['pending', false]), null, 'pending is not checked');
  t.equal(identityOf('eth_getBalance', [H, '0x5']), null, 'nor other methods');
  t.same(identityOfText('eth_getBlockByNumber', '["0x10",true]'), { member: 'number', quantity: 16 });
  t.equal(identityOfText('constructor', '[]'), null, 'no prototype member is a method');
});
