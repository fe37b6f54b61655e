import { mkdirSync } from 'node:fs';
import { createServer, Server, Socket } from 'node:net';
import { resolve } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';

/**
 * In the embedded server's URL (as the connections' application_name): every connection shares
 * one session, so a connection must not assume a session of its own (see prepared.ts).
 */
export const SHARED_SESSION_MARK = 'application_name=formwork-embedded';

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

/**
 * PostgreSQL in-process (PGlite: PostgreSQL compiled to WASM) behind a wire-protocol socket on
 * loopback, so the ordinary `pg` driver, TypeORM and the migrations run unchanged. For laptops and
 * machines without PostgreSQL; production uses DATABASE_URL.
 *
 * PGlite is one PostgreSQL session shared by every client connection, so a connection must own
 * it for a whole exchange: from its first message until PostgreSQL says ReadyForQuery with status
 * idle (no statement cycle and no transaction open). Queueing per message instead (as
 * @electric-sql/pglite-socket 0.2 does) lets two clients' Parse/Bind/Execute interleave, and one
 * query then runs with another's statement: wrong rows, silently.
 */
export async function startEmbeddedPostgres(dataDir: string | undefined): Promise<EmbeddedPostgres> {
  const { PGlite } = await import('@electric-sql/pglite'); // loaded lazily: production never needs it
  let db: PGlite;
  if (dataDir) {
    const dir = resolve(dataDir, 'pglite');
    mkdirSync(dir, { recursive: true });
    db = await PGlite.create(dir);
  } else {
    db = await PGlite.create(); // in memory
  }
  const session = new SessionOwner();
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.setNoDelay(true);
    serve(db, session, socket).catch(() => socket.destroy());
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', done);
  });
  const { port } = server.address() as { port: number };
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable&${SHARED_SESSION_MARK}`,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((done) => (server as Server).close(() => done()));
      await db.close();
    },
  };
}

const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;

/** Reads whole frontend messages from one client and runs them while owning the session. */
async function serve(db: PGlite, session: SessionOwner, socket: Socket): Promise<void> {
  let buffer = Buffer.alloc(0);
  let started = false;
  let chain = Promise.resolve();
  const release = async () => {
    if (!session.isOwner(socket)) return;
    // A client that vanished inside a transaction must not leave it open for the next one.
    if (!db.closed && db.isInTransaction()) await db.exec('ROLLBACK').catch(() => undefined);
    session.release(socket);
  };
  socket.on('close', () => void chain.then(release));
  socket.on('data', (data) => {
    buffer = Buffer.concat([buffer, data]);
    const messages: Buffer[] = [];
    for (;;) {
      // Startup-phase messages have no type byte: int32 length, int32 code.
      const untyped = !started;
      if (buffer.length < (untyped ? 8 : 5)) break;
      const length = untyped ? buffer.readInt32BE(0) : buffer.readInt32BE(1) + 1;
      if (buffer.length < length) break;
      const message = buffer.subarray(0, length);
      buffer = buffer.subarray(length);
      if (untyped) {
        const code = message.readInt32BE(4);
        if (code === SSL_REQUEST) {
          socket.write('N'); // no TLS on loopback
          continue;
        }
        if (code === CANCEL_REQUEST) continue; // not supported
        started = true; // the startup message itself goes to PGlite
      }
      messages.push(Buffer.from(message));
    }
    for (const message of messages)
      chain = chain.then(() => run(db, session, socket, message)).catch(() => void socket.destroy());
  });
}

async function run(db: PGlite, session: SessionOwner, socket: Socket, message: Buffer): Promise<void> {
  await session.acquire(socket);
  let tail = Buffer.alloc(0);
  await db.runExclusive(() =>
    db.execProtocolRawStream(new Uint8Array(message), {
      onRawData: (chunk: Uint8Array) => {
        if (socket.writable) socket.write(chunk);
        tail = Buffer.concat([tail, Buffer.from(chunk)]).subarray(-6);
      },
    }),
  );
  // ReadyForQuery ('Z', length 5, status) ends every exchange; 'I' means no transaction is open.
  if (tail.length === 6 && tail[0] === 0x5a && tail.readInt32BE(1) === 5 && tail[5] === 0x49) session.release(socket);
}

/** Which client connection owns the one PostgreSQL session; others wait their turn in order. */
class SessionOwner {
  private owner: Socket | null = null;
  private readonly waiting: Array<{ socket: Socket; resume: () => void }> = [];

  isOwner(socket: Socket): boolean {
    return this.owner === socket;
  }

  async acquire(socket: Socket): Promise<void> {
    if (this.owner === socket) return;
    if (this.owner === null) {
      this.owner = socket;
      return;
    }
    await new Promise<void>((resume) => this.waiting.push({ socket, resume }));
  }

  release(socket: Socket): void {
    if (this.owner !== socket) return;
    const next = this.waiting.shift();
    this.owner = next?.socket ?? null;
    next?.resume();
  }
}
