/**
 * A gate in front of node:http's connections. node:http takes a connection through its server's
 * 'connection' listeners; a gate moves them behind itself (the PROXY protocol check,
 * proxy-protocol.ts; the plain lane, http-lane.ts), reads what it needs off the socket, and hands
 * the socket on with the bytes it read and did not use put back. Gates stack: one put in front of
 * another hands its sockets to the other.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** Hands a socket to what took connections before the gate, with `rest` (bytes read, not used) put back. */
export type HandOn = (socket: Socket, rest: Buffer | null) => void;

/** Puts `gate` in front of the server's connection listeners; returns how the gate hands a socket on. */
export function gateConnections(server: Server, gate: (socket: Socket) => void): HandOn {
  const behind = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', gate);
  return (socket, rest) => {
    socket.pause();
    if (rest !== null && rest.length > 0) socket.unshift(rest);
    for (const l of behind) l.call(server, socket);
    socket.resume();
  };
}
