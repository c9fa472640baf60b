/**
 * An upstream budget (limits/budget.ts) in memory: tokens taken for calls that were then not sent
 * are given back (a hedged read cancelled while its token was taken: routing/failover.ts), and
 * the window holds them again for the calls that do go.
 */
import t from 'tap';
import { Budget } from '../../src/limits/budget.js';
import { waitFor } from '../helpers/wait.js';

t.test('a token given back can be taken again; without it the window stays spent', async (t) => {
  // 3 calls a window of 30000 s: no window ends within the test.
  const b = new Budget({ ratePerSec: 0.0001, burst: 3 }, 'test-budget-a:', null);
  t.equal(await b.take(3), true, 'three tokens taken');
  t.equal(b.remaining(), 0, 'none left');
  t.equal(await b.take(1), false, 'a fourth is refused');
  b.giveBack(1);
  await waitFor('the token given back', async () => b.remaining() === 1);
  t.equal(await b.take(1), true, 'the token given back is taken again');
  t.equal(await b.take(1), false, 'and no more than it');

  const kept = new Budget({ ratePerSec: 0.0001, burst: 3 }, 'test-budget-b:', null);
  t.equal(await kept.take(3), true, 'another budget: three tokens taken and none given back');
  t.equal(await kept.take(1), false, 'its fourth is refused');
});
