/**
 * uptime.webhooks and uptime.publicUrl as configuration: a webhook URL is a secret (masked in
 * `check --print`, never quoted whole in a refusal), the shapes refused with their key path, and a
 * reload that changes the list replaces the senders (both keys reload; neither is a restart key).
 */
import t from 'tap';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { maskedConfig } from '../../src/config/mask.js';
import { RESTART_KEYS } from '../../src/config/restart.js';
import { MAX_WEBHOOKS } from '../../src/config/uptime-schema.js';
import { startAnvil } from '../helpers/anvil.js';
import { get } from '../helpers/rpc.js';
import { startSwitchyard, testConfig } from '../helpers/switchyard.js';

const up = [{ name: 'a', url: 'http://127.0.0.1:8545' }];
const SLACK = 'https://hooks.slack.com/services/T0AAAA/B0BBBB/SECRETkey123';

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

t.test('defaults, and the webhook URL masked in the printed configuration', async (t) => {
  const plain = validateConfig({ upstreams: up });
  t.same(plain.uptime.webhooks, []);
  t.equal(plain.uptime.publicUrl, null);
  const c = validateConfig({ upstreams: up, uptime: { webhooks: [{ url: SLACK, format: 'slack' }] } });
  t.same(c.uptime.webhooks, [{ url: SLACK, format: 'slack' }]);
  t.equal(validateConfig({ upstreams: up, uptime: { webhooks: [{ url: SLACK }] } }).uptime.webhooks[0]!.format, 'json');
  const printed = JSON.stringify(maskedConfig(c));
  t.notOk(printed.includes('SECRETkey123') || printed.includes('T0AAAA'), 'the path is masked');
  t.match(printed, /"webhooks":\[\{"url":"https:\/\/hooks\.slack\.com\/\*\*\*","format":"slack"\}\]/);
});

t.test('bad values refused by key path, the URL never quoted whole', async (t) => {
  const bad = 'hxxps://hooks.slack.com/services/T0AAAA/B0BBBB/SECRETkey123';
  const problems = problemsOf(() => validateConfig({ upstreams: up, uptime: { webhooks: [{ url: bad }] } }));
  t.same(problems, ['uptime.webhooks[0].url: expected an http(s) URL, got "hxxps://hooks.slack.com/***"']);
  t.match(
    problemsOf(() => validateConfig({ upstreams: up, uptime: { webhooks: [{ url: SLACK, format: 'teams' }] } })),
    [/^uptime\.webhooks\[0\]\.format: .*expected one of "json"\|"slack", got "teams"$/],
  );
  t.match(
    problemsOf(() => validateConfig({ upstreams: up, uptime: { webhooks: [{ url: SLACK, name: 'a b' }] } })),
    [/^uptime\.webhooks\[0\]\.name: expected a name of letters/],
  );
  t.match(
    problemsOf(() => validateConfig({ upstreams: up, uptime: { webhooks: [{ url: SLACK, token: 'x' }] } })),
    ['uptime.webhooks[0].token: unknown option'],
  );
  const many = Array.from({ length: MAX_WEBHOOKS + 1 }, () => ({ url: SLACK }));
  t.match(
    problemsOf(() => validateConfig({ upstreams: up, uptime: { webhooks: many } })),
    [/^uptime\.webhooks: /],
  );
  t.match(
    problemsOf(() => validateConfig({ upstreams: up, uptime: { publicUrl: 'status.example.com' } })),
    [/^uptime\.publicUrl: expected an http\(s\) URL/],
  );
});

t.test('a reload with changed webhooks replaces the senders', async (t) => {
  t.notOk(
    (RESTART_KEYS as readonly string[]).some((k) => k.startsWith('uptime.webhooks') || k === 'uptime.publicUrl'),
    'not restart keys',
  );
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const upstreams = [{ name: 'solo', url: node.url }];
  const uptime = { probeIntervalMs: 100, webhooks: [{ url: 'http://127.0.0.1:9/a', name: 'first' }] };
  const sy = await startSwitchyard(t, { upstreams, uptime });
  const names = async () =>
    ((await get(`${sy.adminUrl}/status`)).json().uptime.webhooks as { name: string }[]).map((w) => w.name);
  t.same(await names(), ['first']);
  await sy.app.reload(
    validateConfig(
      testConfig({
        upstreams,
        uptime: { ...uptime, webhooks: [{ url: 'http://127.0.0.1:9/b', name: 'second', format: 'slack' as const }] },
      }),
    ),
  );
  t.same(await names(), ['second']);
});
