import t from 'tap';
import { request } from 'undici';
import { request as httpRequest } from 'node:http';
import { startAnvil } from '/work/main/test/helpers/anvil.js';
import { startSwitchyard } from '/work/main/test/helpers/switchyard.js';
const anvil = await startAnvil();
t.teardown(() => anvil.stop());
const sy = await startSwitchyard(t, { upstreams: [{ name: 'a', url: anvil.url }], server: { maxBodyBytes: 4096 } });
for (const size of [64 * 1024, 1024 * 1024, 8 * 1024 * 1024]) {
  let ok = 0, errs: string[] = [];
  for (let i = 0; i < 10; i++) {
    const body = Buffer.alloc(size, 0x20);
    try {
      const res = await request(sy.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.body.text();
      if (res.statusCode === 413) ok++; else errs.push(String(res.statusCode));
    } catch (e) { errs.push((e as Error).message); }
  }
  t.comment(`undici size ${size}: ${ok}/10 ok; ${errs.join('|')}`);
  ok = 0; errs = [];
  for (let i = 0; i < 10; i++) {
    const body = Buffer.alloc(size, 0x20);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(sy.url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(size) }, agent: false });
        req.on('response', (res) => { res.resume(); res.on('end', () => resolve(res.statusCode!)); });
        req.on('error', reject);
        req.end(body);
      });
      if (status === 413) ok++; else errs.push(String(status));
    } catch (e) { errs.push((e as Error).message); }
  }
  t.comment(`node:http size ${size}: ${ok}/10 ok; ${errs.join('|')}`);
}
