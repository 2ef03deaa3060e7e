import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on a random loopback port that can turn into a black hole: from then on it forwards nothing either way,
 * keeps every connection open, answers no goodbye (a FIN is not returned: the sockets are half-open on purpose, as on a
 * path that drops every packet) and accepts new connections without ever answering them. `swallowed()` counts the
 * bytes it took in from clients and dropped, `dropped()` the bytes of answers it dropped (a request sent just before
 * the hole waits for an answer that never comes, and sends nothing into it); `restore()` forwards again (new
 * connections only: the silent ones stay silent).
 */
export interface BlackHoleProxy {
  port: number;
  blackHole(): void;
  restore(): void;
  swallowed(): number;
  dropped(): number;
  close(): Promise<void>;
}

export async function blackHoleProxy(target: { host: string; port: number }): Promise<BlackHoleProxy> {
  let hole = false;
  let swallowed = 0;
  let dropped = 0;
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  };
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    track(client);
    const silent = hole;
    if (silent) {
      client.on('data', (d: Buffer) => (swallowed += d.length));
      return;
    }
    const upstream = connect({ port: target.port, host: target.host, allowHalfOpen: true });
    track(upstream);
    let cut = false;
    client.on('data', (d: Buffer) => (hole || cut ? (swallowed += d.length) : upstream.write(d)));
    upstream.on('data', (d: Buffer) => void (hole || cut ? (dropped += d.length) : client.write(d)));
    // Before the hole, a goodbye passes as usual; in it, none does.
    client.on('end', () => void (hole || upstream.end()));
    upstream.on('end', () => void (hole || client.end()));
    upstream.on('close', () => {
      cut = true;
      if (!hole) client.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    blackHole: () => void (hole = true),
    restore: () => void (hole = false),
    swallowed: () => swallowed,
    dropped: () => dropped,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A TCP server that accepts every connection and never answers (an OTLP collector that black-holes). */
export async function silentServer(): Promise<{ port: number; connections(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    connections: () => connections,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback port nothing listens on (connections are refused): one taken and released at once. */
export async function refusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
