/** A free TCP port on 127.0.0.1, for processes that must be told their port (redis, prometheus). */
import type { Server as HttpServer } from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * Listens on a free port of 127.0.0.1 and, at the test's end, destroys the connections still open
 * (kept-alive ones too) and closes the server. Resolves to the port.
 */
export async function listenUntilTeardown(
  t: { teardown(fn: () => unknown): void },
  server: HttpServer,
): Promise<number> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return (server.address() as AddressInfo).port;
}
