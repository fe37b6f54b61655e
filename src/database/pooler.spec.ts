import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { databaseUnavailableKind } from '../common/errors/database-unavailable';
import { dataSourceOptions, MAINTENANCE, poolBounds, SessionBounds } from './data-source';
import { allowLongStatements } from './long-statements';
import { setPoolerBounds } from './pooler';
import { prepared } from './prepared';
import { currentManager, inTransaction, openGuardedDataSource } from './transaction';

/**
 * DATABASE_POOLER=transaction against the test PostgreSQL: what a transaction pooler cannot carry
 * (startup settings, named statements) is not used, and every statement is still bounded, by the
 * role's defaults in the database (setPoolerBounds). Those defaults apply to every new session in
 * their database, so the spec sets them in an empty database of its own: in the run's shared one,
 * a suite running alongside would start its sessions with a 200 ms lock timeout.
 */
describe('transaction pooler mode', () => {
  const shared = new URL(process.env.FORMWORK_TEST_DATABASE_URL!);
  const name = `${shared.pathname.slice(1)}_pooler`;
  const url = Object.assign(new URL(shared), { pathname: `/${name}` }).toString();
  const timeouts = { connectMs: 3000, statementMs: 300, lockMs: 200, idleInTransactionMs: 1500 };
  const bounds: SessionBounds = { kind: 'request', timeouts, pooler: 'transaction' };
  let db: DataSource;

  beforeAll(async () => {
    if (process.env.FORMWORK_TEST_DATABASE_KIND === 'embedded') {
      throw new Error(
        'Pooler mode is tested on a PostgreSQL server: start one at TEST_DATABASE_SERVER (127.0.0.1:5432)',
      );
    }
    await plainQuery(`CREATE DATABASE ${name}`, shared.toString());
    await setPoolerBounds(url, url, timeouts);
    // One connection: what one statement leaves in the session, the next one sees.
    db = await openGuardedDataSource(dataSourceOptions(url, 1, false, bounds));
  });
  afterAll(async () => {
    await db?.destroy();
    // The role's defaults in that database go with it.
    await plainQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`, shared.toString());
  });

  /** One statement on a session of its own, with no startup setting (as a pooler's server session starts). */
  const plainQuery = async (sql: string, on = url) => {
    const c = new Client({ connectionString: on });
    await c.connect();
    try {
      return (await c.query(sql)).rows;
    } finally {
      await c.end();
    }
  };
  const bounds3 = `SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l,
                          current_setting('idle_in_transaction_session_timeout') AS i`;

  const setting = async (name: string) =>
    (await currentManager(db).query(`SELECT current_setting('${name}') AS v`))[0].v as string;

  it('sends no session setting in the startup message (PgBouncer 1.18 refuses them)', () => {
    const options = poolBounds('postgres://u@pgbouncer:6432/app', bounds);
    expect(options).not.toHaveProperty('statement_timeout');
    expect(options).not.toHaveProperty('lock_timeout');
    expect(options).not.toHaveProperty('idle_in_transaction_session_timeout');
    expect(options).toHaveProperty('query_timeout', timeouts.statementMs + 2000);
  });

  it('sets the bounds as the role defaults a new session starts with, once, and a change replaces them', async () => {
    expect(await plainQuery(bounds3)).toEqual([{ s: '300ms', l: '200ms', i: '1500ms' }]);
    await setPoolerBounds(url, url, timeouts); // the same again: nothing to change
    await setPoolerBounds(url, url, { ...timeouts, statementMs: 400 });
    expect(await plainQuery(bounds3)).toEqual([{ s: '400ms', l: '200ms', i: '1500ms' }]);
    await setPoolerBounds(url, url, timeouts);
    const [{ setconfig }] = await plainQuery(
      `SELECT setconfig FROM pg_db_role_setting
        WHERE setrole = (SELECT oid FROM pg_roles WHERE rolname = current_user)
          AND setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    expect([...setconfig].sort()).toEqual([
      'idle_in_transaction_session_timeout=1500',
      'lock_timeout=200',
      'statement_timeout=300',
    ]);
  });

  it('warns on stderr when a session through the pooler runs with other bounds', async () => {
    // Here the "pooler" is another database, where the role has no defaults: as a server session
    // the pooler opened before the bounds were set, or a DATABASE_DIRECT_URL of another role.
    const elsewhere = new URL(url);
    elsewhere.pathname = '/postgres';
    const written: string[] = [];
    const spy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      await setPoolerBounds(url, elsewhere.toString(), timeouts);
      await setPoolerBounds(url, url, timeouts);
    } finally {
      spy.mockRestore();
    }
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(
      /^formwork: warning: a session through the pooler runs with other bounds \(statement_timeout 0 ms/,
    );
  });

  it('sends a lone statement alone: no transaction around it', async () => {
    // In a transaction opened by an earlier BEGIN, now() (its start) is before the statement's start.
    expect(await db.query('SELECT now() = statement_timestamp() AS alone')).toEqual([{ alone: true }]);
  });

  it('leaves maintenance sessions (migrations, the CLI) without a statement or lock timeout', async () => {
    const maintenance = await openGuardedDataSource(dataSourceOptions(url, 1, false, MAINTENANCE));
    try {
      expect(await maintenance.query(bounds3)).toEqual([{ s: '0', l: '0', i: '1min' }]);
    } finally {
      await maintenance.destroy();
    }
  });

  it('bounds a lone statement and every transaction, and SET LOCAL raises a bound for its transaction only', async () => {
    expect(await setting('statement_timeout')).toBe('300ms');
    expect(await setting('lock_timeout')).toBe('200ms');
    expect(await setting('idle_in_transaction_session_timeout')).toBe('1500ms');
    await inTransaction(db, async (tx) => {
      expect((await tx.query(`SELECT current_setting('statement_timeout') AS v`))[0].v).toBe('300ms');
      await allowLongStatements(tx, 60_000);
      expect((await tx.query(`SELECT current_setting('statement_timeout') AS v`))[0].v).toBe('1min');
    });
    // The raised bound ended with its transaction: nothing stayed in the session.
    expect(await setting('statement_timeout')).toBe('300ms');
  });

  it('cancels a statement past the timeout, alone or in a transaction, as a 503 timeout', async () => {
    const alone = await db.query('SELECT pg_sleep(2)').catch((e: unknown) => e);
    expect(databaseUnavailableKind(alone)).toBe('timeout');
    const inside = await inTransaction(db, (tx) => tx.query('SELECT pg_sleep(2)')).catch((e: unknown) => e);
    expect(databaseUnavailableKind(inside)).toBe('timeout');
    expect(await setting('statement_timeout')).toBe('300ms'); // the connection still serves
  });

  it('gives up a lock wait past lock_timeout (busy)', async () => {
    const holder = new Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(3707)');
      const err = await db.query('SELECT pg_advisory_xact_lock(3707)').catch((e: unknown) => e);
      expect(databaseUnavailableKind(err)).toBe('busy');
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });

  it('prepares no named statement: prepared() gives the text, and a named query is sent unnamed', async () => {
    const text = 'SELECT $1::int + 1 AS n';
    expect(prepared(db.manager, text)).toBe(text);
    const named = { name: 'formwork_named', text } as unknown as string;
    expect(await db.query(named, [1])).toEqual([{ n: 2 }]);
    expect(await db.query(prepared(db.manager, text), [2])).toEqual([{ n: 3 }]);
    expect(await db.query('SELECT count(*)::int AS n FROM pg_prepared_statements')).toEqual([{ n: 0 }]);
  });

  it('rolls back a failed lone statement: the connection serves the next one', async () => {
    await expect(db.query('SELECT 1/0')).rejects.toThrow(/division by zero/);
    // Left open, the aborted transaction would refuse this (25P02).
    expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });
});
