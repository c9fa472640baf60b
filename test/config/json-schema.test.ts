/**
 * config/switchyard.schema.json (SPEC 9): the configuration's JSON Schema, generated from the one
 * zod schema by scripts/config-schema.mjs. The committed file is what the script writes now, and
 * every shipped config file passes it (a JSON Schema validator, as an editor would check), while a
 * misspelt key or a port out of range does not.
 */
import { readFileSync, readdirSync } from 'node:fs';
import t from 'tap';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';
import { configJsonSchema } from '../../src/config/json-schema.js';

const CONFIG = new URL('../../config/', import.meta.url);
const committed = readFileSync(new URL('switchyard.schema.json', CONFIG), 'utf8');

t.test('the committed schema is the one generated from the zod schema', async (t) => {
  t.equal(committed, `${JSON.stringify(configJsonSchema(), null, 2)}\n`, 'run `npm run build && npm run schema`');
});

t.test('every shipped Switchyard config passes it; wrong keys and values do not', async (t) => {
  const validate = new Ajv2020({ strict: false, allErrors: true }).compile(JSON.parse(committed));
  // config/*.yaml are Switchyard's (the .yml files are Prometheus' and Alertmanager's).
  const files = readdirSync(CONFIG).filter((f) => f.endsWith('.yaml'));
  t.ok(
    ['example.yaml', 'devnet.yaml', 'compose.yaml'].every((f) => files.includes(f)),
    files.join(', '),
  );
  for (const f of files) {
    const ok = validate(parse(readFileSync(new URL(f, CONFIG), 'utf8')));
    t.ok(ok, `${f} passes${ok ? '' : `: ${JSON.stringify(validate.errors?.slice(0, 3))}`}`);
  }
  const upstreams = [{ name: 'a', url: 'http://127.0.0.1:8545' }];
  t.notOk(validate({ upstreams, sever: { port: 1 } }), 'a misspelt top-level key');
  t.notOk(validate({ upstreams, server: { port: 70_000 } }), 'a port out of range');
  t.ok(validate({ upstreams }), 'the smallest config');
});
