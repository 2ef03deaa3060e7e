import { createServer, connect, type Socket } from 'node:net';

/**
 * A TCP proxy on a random loopback port in front of Postgres, to break the path between the store and the server on
 * purpose: `blackhole()` keeps every connection open but lets nothing through (a network path gone silent: no reset,
 * no answer), `cut()` resets every connection (a restart, a failover), `restore()` forwards again.
 */
export interface TcpProxy {
  port: number;
  /** Connections accepted so far. */
  connections(): number;
  blackhole(): void;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function tcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let silent = false;
  let accepted = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    accepted++;
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk) => silent || upstream.write(chunk));
    upstream.on('data', (chunk) => silent || client.write(chunk));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    connections: () => accepted,
    blackhole: () => void (silent = true),
    restore: () => void (silent = false),
    cut: () => {
      for (const socket of sockets) socket.resetAndDestroy();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
