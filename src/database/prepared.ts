import type { DataSource, EntityManager } from 'typeorm';
import { SHARED_SESSION_MARK } from './embedded-postgres';
import { isTransactionPooled } from './pooler';

/** The prepared statements of this process, by SQL text. */
const statements = new Map<string, { name: string; text: string }>();
const sharedSession = new WeakMap<DataSource, boolean>();

/**
 * `text` as a named prepared statement, for a hot statement: PostgreSQL then parses and plans it
 * once per connection instead of on every call, which halves the database's work for a
 * submission. Pass the result as the query to EntityManager.query(): TypeORM hands it to
 * node-postgres, which prepares it on a connection's first use. The embedded PostgreSQL gets the
 * plain text: its connections share one session, where a name one prepared already exists for
 * the next. Nor does a pooler in transaction mode (DATABASE_POOLER=transaction), whose next
 * transaction may run on a server session that never saw the name.
 */
export function prepared(manager: EntityManager, text: string): string {
  if (takesPlainText(manager.connection)) return text;
  let statement = statements.get(text);
  if (!statement) {
    statement = { name: `formwork_${statements.size + 1}`, text };
    statements.set(text, statement);
  }
  return statement as unknown as string;
}

/** Whether prepared() prepares statements on this database (not behind a transaction pooler nor on the embedded one). */
export function preparesStatements(db: DataSource): boolean {
  return !takesPlainText(db);
}

function takesPlainText(db: DataSource): boolean {
  let shared = sharedSession.get(db);
  if (shared === undefined) {
    const { url, extra } = db.options as { url?: string; extra?: unknown };
    shared = String(url ?? '').includes(SHARED_SESSION_MARK) || isTransactionPooled(extra);
    sharedSession.set(db, shared);
  }
  return shared;
}

/** The SQL of a query given to TypeORM: text, or a prepared statement's text. */
export function sqlText(query: unknown): string {
  return typeof query === 'string' ? query : String((query as { text?: unknown })?.text ?? '');
}
