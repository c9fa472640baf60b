/**
 * Which methods are held (the node holds them by design, so they take its held lane): the table's
 * eth_sendRawTransactionSync and debug_trace*, and an allowed or extension method named like a
 * trace, which is also expensive as the table's traces are. Nothing else.
 */
import t from 'tap';
import { MethodPolicy } from '../../src/methods/policy.js';
import { METHODS } from '../../src/methods/table.js';

t.test('the table: eth_sendRawTransactionSync and the traces are held, nothing else', async (t) => {
  const held = Object.entries(METHODS)
    .filter(([, spec]) => spec.held === true)
    .map(([m]) => m)
    .sort();
  t.same(held, [
    'debug_traceBlockByHash',
    'debug_traceBlockByNumber',
    'debug_traceCall',
    'debug_traceTransaction',
    'eth_sendRawTransactionSync',
  ]);
  t.equal(METHODS.eth_call?.held, undefined, 'an eth_call is expensive, not held: it keeps the plain pool');
});

t.test('allowed and extension methods named like a trace are held and expensive', async (t) => {
  const policy = new MethodPolicy({
    allow: ['trace_*', 'debug_traceBadBlock', 'erigon_*'],
    deny: [],
    extensions: ['trace_custom'],
  });
  for (const m of ['trace_filter', 'trace_replayTransaction', 'debug_traceBadBlock', 'trace_custom']) {
    const spec = policy.resolve(m)?.spec;
    t.match(spec, { handling: 'read', held: true, expensive: true }, m);
  }
  t.equal(policy.resolve('erigon_getHeaderByNumber')?.spec.held, undefined, 'another allowed method is a plain read');
});
