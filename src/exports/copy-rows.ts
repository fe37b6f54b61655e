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

/** The bytes of one output part: about the socket's own write size. */
const PART_BYTES = 64 * 1024;
const LF = 0x0a;

/** Output bytes in parts of about PART_BYTES, and pg's Submittable around one simple query. */
abstract class RowsToBytes {
  readonly done: Promise<Buffer[]>;
  protected readonly parts: Buffer[] = [];
  protected part = Buffer.allocUnsafe(PART_BYTES);
  protected used = 0;
  private settle!: { resolve: (parts: Buffer[]) => void; reject: (err: Error) => void };
  protected failed = false;

  constructor(private readonly text: string) {
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
  }

  submit(connection: { query(text: string): void }): void {
    connection.query(this.text);
  }

  handleReadyForQuery(): void {
    if (this.failed) return;
    this.flush(0);
    this.settle.resolve(this.parts);
  }

  handleError(err: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.settle.reject(err);
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
    this.used = 0;
    if (room) this.part = Buffer.allocUnsafe(Math.max(PART_BYTES, room));
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
  ) {
    super(text);
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

/** The rows of `copySql` (a COPY ... TO STDOUT WITH (FORMAT csv)), CRLF ended, as parts of about 64 KiB. */
export function copyRows(client: PoolClient, copySql: string): Promise<Buffer[]> {
  const copy = new CopyRows(copySql);
  void client.query(copy as never);
  return copy.done;
}

/** The rows of `selectSql` (a simple query: no parameters), each as line(row), as UTF-8 parts of about 64 KiB. */
export function lineRows(
  client: PoolClient,
  selectSql: string,
  line: (row: Record<string, unknown>) => string,
): Promise<Buffer[]> {
  const rows = new LineRows(selectSql, client, line);
  void client.query(rows as never);
  return rows.done;
}
