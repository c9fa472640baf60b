/** A webhook receiver for tests: keeps every JSON body POSTed to it; `answer` writes the reply (200 by default). */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Test } from 'tap';
import { listenUntilTeardown } from './ports.js';

export async function webhookReceiver(
  t: Test,
  answer: (res: ServerResponse) => void = (res) => res.end(),
): Promise<{ url: string; port: number; bodies: any[] }> {
  const bodies: any[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString()));
      answer(res);
    });
  });
  const port = await listenUntilTeardown(t, server);
  return { url: `http://127.0.0.1:${port}/hook/SECRETPATH`, port, bodies };
}
