/**
 * A batch's statement run on a pg client as pg's Submittable, its output collected as bytes: no
 * JavaScript string or object per row that outlives the row, so that a big export allocates next
 * to nothing that survives on V8's heap. (A batch's rows, parsed into objects or written as
 * strings, live across the awaits of the socket's reads and the client's draining: V8 promoted
 * them to its old space and kept them until a full collection, so the instance grew by a hundred
 * MiB or more over a million responses, however slowly the client read.)
 *
 * CSV: `COPY (SELECT ...) TO STDOUT WITH (FORMAT csv)` (copyRows), PostgreSQL's rows passed through.
 * NDJSON: a SELECT (lineRows) whose every row is written as its line the moment pg has parsed it.
 * Both are simple queries (no parameters: values are literals).
 */
import type { PoolClient } from 'pg';
import type { Readable } from 'node:stream';

/** The bytes of one output part: about the socket's own write size. */
const PART_BYTES = 64 * 1024;
const LF = 0x0a;

/**
 * The output parts of one download, reused once the response has written them. Why: a part lives
 * from its batch's read to its write, long enough for V8 to promote it, and a promoted Buffer's
 * 64 KiB (memory outside V8's heap) is freed only by a full collection, which V8 starts when about
 * 64 MiB of such memory has piled up: a fresh instance grew that much per export. Reused, a
 * download allocates about two batches of parts, once.
 *
 * A part is known written when the body has emitted it (counted by a 'data' listener) and the
 * response holds fewer bytes than were emitted after it (`writableLength`, which counts a chunk
 * until the socket has written it, with its chunked-encoding framing: never less than ours). Only
 * while the body is piped into that response (its 'pipe' event; Fastify pipes a stream body as
 * is), and never after the body closed: otherwise every part is a new one, as without a pool.
 */
export class PartPool {
  private readonly free: Buffer[] = [];
  /** Parts handed to the body and not yet known written, each with the body's byte count at its end. */
  private readonly out: Array<{ part: ArrayBufferLike; end: number }> = [];
  /** Bytes handed to the body (in the order it emits them). */
  private handed = 0;
  /** Bytes the body has emitted to the response; undefined while reuse is off. */
  private emitted?: number;

  constructor(
    private readonly body: Readable,
    private readonly sink: { writableLength: number; on(event: 'pipe', fn: (src: unknown) => void): unknown },
  ) {
    sink.on('pipe', (src) => {
      if (src !== body || this.emitted !== undefined) return;
      this.emitted = 0;
      body.on('data', (chunk: Buffer) => (this.emitted! += chunk.length));
      body.once('close', () => (this.emitted = undefined));
    });
  }

  /** A part of PART_BYTES: a written one if any, else a new one. */
  take(): Buffer {
    if (!this.free.length) this.reclaim();
    return this.free.pop() ?? Buffer.allocUnsafe(PART_BYTES);
  }

  /** A part taken and never filled. */
  giveBack(part: Buffer): void {
    if (part.byteOffset === 0 && part.buffer.byteLength === PART_BYTES) this.free.push(part);
  }

  /** `chunk` is handed to the body (every chunk, in order: the count of bytes must be the body's). */
  handing(chunk: Buffer | string): void {
    this.handed += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    // Only whole parts of PART_BYTES come back (a longer row's own part does not).
    if (typeof chunk !== 'string' && chunk.byteOffset === 0 && chunk.buffer.byteLength === PART_BYTES)
      this.out.push({ part: chunk.buffer, end: this.handed });
  }

  private reclaim(): void {
    if (this.emitted === undefined || this.body.destroyed) return;
    const written = this.emitted - this.sink.writableLength;
    while (this.out.length && this.out[0].end <= written) this.free.push(Buffer.from(this.out.shift()!.part));
  }
}

/** Output bytes in parts of about PART_BYTES, and pg's Submittable around one simple query. */
abstract class RowsToBytes {
  readonly done: Promise<Buffer[]>;
  protected readonly parts: Buffer[] = [];
  protected part: Buffer;
  protected used = 0;
  private settle!: { resolve: (parts: Buffer[]) => void; reject: (err: Error) => void };
  protected failed = false;
  /**
   * Set by pg's client.query when a read timeout applies (query_timeout: every pool of ours): it
   * clears the timer, whose closure holds this object and so every part. pg's own Query calls it
   * when the query ends; a Submittable must too, or each batch's parts stay reachable until its
   * timer fires (statement timeout + 2 s after it started), which kept a whole fast export's
   * bytes alive (+160 MiB for 1M responses on a fresh instance).
   */
  callback?: (err: Error | null) => void;

  constructor(
    private readonly text: string,
    private readonly pool?: PartPool,
  ) {
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.part = this.newPart(PART_BYTES);
  }

  submit(connection: { query(text: string): void }): void {
    connection.query(this.text);
  }

  handleReadyForQuery(): void {
    if (this.failed) return;
    this.flush(0);
    this.settle.resolve(this.parts);
    this.end(null);
  }

  handleError(err: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.settle.reject(err);
    this.end(err);
  }

  /** Tells pg the query is over (once): see callback. */
  private end(err: Error | null): void {
    const callback = this.callback;
    this.callback = undefined;
    callback?.(err);
  }

  // Not needed here; there for pg's Submittable.
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}

  /** Room for `bytes` more in the part under way, ending it (if it holds anything) when it has not. */
  protected room(bytes: number): void {
    if (this.used + bytes > this.part.length) this.flush(bytes);
  }

  /** Ends the part under way (if it holds anything) and starts one of at least `room` bytes. */
  private flush(room: number): void {
    if (this.used) this.parts.push(this.part.subarray(0, this.used));
    else if (!room) this.pool?.giveBack(this.part);
    this.used = 0;
    if (room) this.part = this.newPart(room);
  }

  /** A part of at least `room` bytes: the pool's, or a new one. */
  private newPart(room: number): Buffer {
    return room <= PART_BYTES && this.pool ? this.pool.take() : Buffer.allocUnsafe(Math.max(PART_BYTES, room));
  }
}

/**
 * One COPY TO STDOUT. PostgreSQL sends each row as one CopyData message ending in LF; each is
 * copied at once (pg's parser reuses its buffer), its LF written as CRLF (RFC 4180).
 */
class CopyRows extends RowsToBytes {
  handleCopyData(msg: { chunk: Buffer }): void {
    const row = msg.chunk;
    const body = row.length && row[row.length - 1] === LF ? row.length - 1 : row.length;
    this.room(body + 2);
    row.copy(this.part, this.used, 0, body);
    this.part[this.used + body] = 0x0d;
    this.part[this.used + body + 1] = LF;
    this.used += body + 2;
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
}

/** The columns' names and parsers of a SELECT's rows, as pg's own Result parses them. */
interface Columns {
  names: string[];
  parsers: Array<(text: string) => unknown>;
}

/** One SELECT: each row parsed as pg would (the client's type parsers), then written as line(row) in UTF-8. */
class LineRows extends RowsToBytes {
  private columns?: Columns;

  constructor(
    text: string,
    private readonly client: PoolClient,
    private readonly line: (row: Record<string, unknown>) => string,
    pool?: PartPool,
  ) {
    super(text, pool);
  }

  handleRowDescription(msg: { fields: Array<{ name: string; dataTypeID: number; format?: string }> }): void {
    this.columns = {
      names: msg.fields.map((f) => f.name),
      parsers: msg.fields.map((f) => this.client.getTypeParser(f.dataTypeID, 'text') as (text: string) => unknown),
    };
  }

  handleDataRow(msg: { fields: Array<string | null> }): void {
    if (this.failed) return;
    const { names, parsers } = this.columns!;
    const row: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) {
      const text = msg.fields[i];
      row[names[i]] = text === null ? null : parsers[i](text);
    }
    let line: string;
    try {
      line = this.line(row);
    } catch (err) {
      // Thrown inside pg's message handling: the batch fails (its rows still arrive, and are dropped).
      return this.handleError(err instanceof Error ? err : new Error(String(err)));
    }
    const bytes = Buffer.byteLength(line);
    this.room(bytes);
    this.used += this.part.write(line, this.used);
  }

  handleCopyData(): void {}
}

/** The rows of `copySql` (a COPY ... TO STDOUT WITH (FORMAT csv)), CRLF ended, as parts of about 64 KiB (the pool's if given). */
export function copyRows(client: PoolClient, copySql: string, pool?: PartPool): Promise<Buffer[]> {
  const copy = new CopyRows(copySql, pool);
  void client.query(copy as never);
  return copy.done;
}

/** The rows of `selectSql` (a simple query: no parameters), each as line(row), as UTF-8 parts of about 64 KiB. */
export function lineRows(
  client: PoolClient,
  selectSql: string,
  line: (row: Record<string, unknown>) => string,
  pool?: PartPool,
): Promise<Buffer[]> {
  const rows = new LineRows(selectSql, client, line, pool);
  void client.query(rows as never);
  return rows.done;
}
