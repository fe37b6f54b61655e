import { Readable, Writable } from 'node:stream';
import { PartPool } from './copy-rows';

const PART = 64 * 1024;
const tick = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A response that holds each chunk it is given (not a copy) until its socket "writes" it, a few
 * milliseconds later, and only then reads its bytes: a part reused too early shows there.
 */
function slowSink() {
  const received: Buffer[] = [];
  const sink = new Writable({
    highWaterMark: 16 * 1024,
    write(chunk: Buffer, _encoding, done) {
      setTimeout(() => {
        received.push(Buffer.from(chunk));
        done();
      }, Math.random() * 3);
    },
  });
  return { sink, received };
}

/** `count` parts of the pool, each filled with its own byte, between a text header and footer. */
function body(count: number, poolOf: () => PartPool | undefined, taken: Set<ArrayBufferLike>) {
  async function* chunks() {
    const pool = poolOf();
    const out = <T extends string | Buffer>(chunk: T): T => {
      pool?.handing(chunk);
      return chunk;
    };
    yield out('héader\n');
    for (let i = 0; i < count; i++) {
      if (i % 7 === 0) await tick(); // as a batch's rows arrive: between macrotasks
      const part = pool ? pool.take() : Buffer.allocUnsafe(PART);
      taken.add(part.buffer);
      const length = i % 5 === 0 ? PART : 1 + ((i * 7919) % PART);
      part.fill(i % 251, 0, length);
      yield out(part.subarray(0, length));
    }
    yield out('footer\n');
  }
  return chunks;
}

function expected(count: number): Buffer {
  const parts: Buffer[] = [Buffer.from('héader\n')];
  for (let i = 0; i < count; i++) parts.push(Buffer.alloc(i % 5 === 0 ? PART : 1 + ((i * 7919) % PART), i % 251));
  parts.push(Buffer.from('footer\n'));
  return Buffer.concat(parts);
}

describe('PartPool', () => {
  it('reuses the parts the response has written, never one it still holds: the bytes arrive as handed', async () => {
    const count = 400;
    const { sink, received } = slowSink();
    const made: { pool?: PartPool } = {};
    const taken = new Set<ArrayBufferLike>();
    const stream = Readable.from(body(count, () => made.pool, taken)(), { objectMode: false, highWaterMark: PART });
    made.pool = new PartPool(stream, sink);
    await new Promise<void>((resolve, reject) => {
      sink.on('finish', resolve).on('error', reject);
      stream.pipe(sink);
    });
    expect(Buffer.concat(received).equals(expected(count))).toBe(true);
    // A few parts in flight at a time, not one per chunk.
    expect(taken.size).toBeLessThan(count / 10);
  });

  it('allocates a new part each time while the body is not piped into the response it was given', async () => {
    const count = 60;
    const { sink, received } = slowSink();
    const made: { pool?: PartPool } = {};
    const taken = new Set<ArrayBufferLike>();
    const stream = Readable.from(body(count, () => made.pool, taken)(), { objectMode: false, highWaterMark: PART });
    made.pool = new PartPool(stream, new Writable({ write: (_c, _e, done) => done() }));
    await new Promise<void>((resolve, reject) => {
      sink.on('finish', resolve).on('error', reject);
      stream.pipe(sink);
    });
    expect(Buffer.concat(received).equals(expected(count))).toBe(true);
    expect(taken.size).toBe(count);
  });
});
