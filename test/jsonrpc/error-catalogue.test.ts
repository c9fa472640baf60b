// The error catalogue is closed and documented (STYLE habit 4, SPEC 3.3): every entry has a distinct
// name, an integer JSON-RPC code, an HTTP status and a message, and the error table of docs/errors.md
// has a row naming each entry in backticks with its code. A missing page fails this test on purpose.

import { readFileSync } from 'node:fs';
import t from 'tap';
import { CATALOGUE, RpcError } from '../../src/jsonrpc/errors.js';

const entries = Object.entries(CATALOGUE) as [keyof typeof CATALOGUE, (typeof CATALOGUE)[keyof typeof CATALOGUE]][];
const ERRORS_PAGE = new URL('../../docs/errors.md', import.meta.url);

t.test('every entry is well formed', async (t) => {
  t.ok(entries.length >= 10, 'the catalogue is not empty');
  const names = entries.map(([name]) => name);
  t.equal(new Set(names).size, names.length, 'names are distinct');
  const messages = entries.map(([, e]) => e.message);
  t.equal(new Set(messages).size, messages.length, 'messages are distinct');
  for (const [name, e] of entries) {
    t.match(name, /^[A-Z][A-Z0-9_]*$/, `${name}: name is UPPER_SNAKE`);
    t.ok(Number.isInteger(e.code), `${name}: integer code`);
    t.ok((e.code >= -32768 && e.code <= -32000) || e.code > 0, `${name}: code ${e.code} in the JSON-RPC server range`);
    t.ok(Number.isInteger(e.http) && e.http >= 200 && e.http <= 599, `${name}: HTTP status ${e.http}`);
    t.ok(e.http === 200 || e.http >= 400, `${name}: a rejection status is an error status`);
    t.type(e.message, 'string');
    t.ok(e.message.length > 0, `${name}: message`);
    t.ok(e.doc.length > 0, `${name}: doc`);
  }
});

t.test('an RpcError carries its entry and data.reason', async (t) => {
  for (const [name, e] of entries) {
    const err = new RpcError(name);
    t.strictSame(JSON.parse(JSON.stringify(err)), { code: e.code, message: e.message, data: { reason: name } }, name);
    t.equal(err.http, e.http, name);
  }
});

t.test('an RpcError captures no stack, and leaves the stack of other errors as it was', async (t) => {
  const limit = Error.stackTraceLimit;
  const err = new RpcError('METHOD_NOT_FOUND');
  t.equal(err.stack, `Error: ${CATALOGUE.METHOD_NOT_FOUND.message}`, 'its stack is its first line alone');
  t.ok(err instanceof Error, 'it is still an Error (thrown, caught and logged as one)');
  t.equal(Error.stackTraceLimit, limit, 'Error.stackTraceLimit is as it was');
  t.match(new Error('after').stack, /\n\s+at .*error-catalogue\.test\.ts:\d+/, 'an Error made after it has its frames');
});

t.test('the codes SPEC 3.3 lists are all present', async (t) => {
  const codes = new Set<number>(entries.map(([, e]) => e.code));
  for (const c of [-32700, -32600, -32601, -32602, -32603, -32005, -32002, -32000]) t.ok(codes.has(c), `code ${c}`);
  t.equal(CATALOGUE.PARSE_ERROR.code, -32700);
  t.equal(CATALOGUE.METHOD_NOT_FOUND.code, -32601);
  t.equal(CATALOGUE.BODY_TOO_LARGE.message, 'request body too large');
  t.equal(CATALOGUE.BODY_TOO_LARGE.http, 413);
  t.equal(CATALOGUE.BATCH_TOO_LARGE.http, 413);
  t.equal(CATALOGUE.BAD_CONTENT_TYPE.http, 415);
  t.equal(CATALOGUE.BAD_HTTP_METHOD.http, 405);
  t.equal(CATALOGUE.RATE_LIMITED.http, 429);
  t.equal(CATALOGUE.EMPTY_BATCH.message, 'empty batch');
});

t.test('docs/errors.md documents every entry in its error table', async (t) => {
  let page: string;
  try {
    page = readFileSync(ERRORS_PAGE, 'utf8');
  } catch (err) {
    t.fail(`docs/errors.md must exist with the error table (${(err as NodeJS.ErrnoException).code})`);
    return;
  }
  const rows = page.split('\n').filter((l) => l.trimStart().startsWith('|'));
  for (const [name, e] of entries) {
    const row = rows.find((l) => l.includes(`\`${name}\``));
    if (!row) {
      t.fail(`docs/errors.md error table has a row for \`${name}\``);
      continue;
    }
    const cells = row.split('|').map((c) => c.replace(/`/g, '').trim());
    t.ok(cells.includes(String(e.code)), `${name}: its row shows code ${e.code}`);
    t.ok(cells.includes(String(e.http)), `${name}: its row shows HTTP ${e.http}`);
  }
});
