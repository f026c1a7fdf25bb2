import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a real server, to cut the service off from it as an outage would:
 * `stop()` closes the listener (new connections are refused) AND destroys every open connection
 * (connections in use break mid-way); `start()` listens again on the same port. Used in front of
 * the shared PostgreSQL: the server itself is never touched.
 */
export interface TcpProxy {
  readonly port: number;
  /** Open client connections right now. */
  readonly connections: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;

  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    // A peer going away is the point of this proxy: never let a socket error escape.
    socket.on('error', () => socket.destroy());
  };

  async function listen(): Promise<void> {
    const next = createServer((client) => {
      const upstream = connect(target.port, target.host);
      track(client);
      track(upstream);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      next.once('error', reject);
      next.listen(port, '127.0.0.1', () => {
        next.off('error', reject);
        resolve();
      });
    });
    port = (next.address() as { port: number }).port;
    server = next;
  }

  async function stop(): Promise<void> {
    const current = server;
    server = undefined;
    if (!current) return;
    const closed = new Promise<void>((resolve) => current.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  }

  await listen();
  return {
    get port() {
      return port;
    },
    get connections() {
      return [...sockets].length;
    },
    stop,
    async start() {
      if (!server) await listen();
    },
    close: stop,
  };
}
