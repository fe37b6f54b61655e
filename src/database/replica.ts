import { Global, Inject, Injectable, Logger, Module, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/config';
import { databaseUnavailableKind } from '../common/errors/database-unavailable';
import { dataSourceOptions } from './data-source';
import { currentManager } from './transaction';

/** After the replica failed or fell behind, reads go to the primary this long before it is tried again. */
export const REPLICA_RETRY_MS = 2000;
/** How often a read waiting for the replica asks how far it has replayed. */
const POLL_MS = 10;

export type ReplicaStatus = { ok: boolean; lagMs?: number };

type ReplicaConfig = Pick<
  AppConfig,
  'databaseReplicaUrl' | 'databaseReplicaMaxWaitMs' | 'databasePooler' | 'databaseTimeouts' | 'databasePoolSize'
>;

/**
 * The read replica (DATABASE_REPLICA_URL) of the long reads: filtered lists and summaries, exports
 * (see LongReads). A streaming replica replays the primary's WAL a little later, so a read that
 * must include everything committed before it started (a caller's own writes, an exact walk's
 * total) takes the primary's WAL position first, and reads the replica only once the replica has
 * replayed up to it, waiting at most DATABASE_REPLICA_MAX_WAIT_MS; otherwise it reads the primary.
 * A replica that is down, paused or far behind never fails a read: the read goes to the primary,
 * and the replica is left alone for REPLICA_RETRY_MS. /readyz reports its state without failing.
 */
@Injectable()
export class ReadReplica implements OnModuleDestroy {
  private readonly logger = new Logger('ReadReplica');
  private opening?: Promise<DataSource>;
  private avoidUntil = 0;

  constructor(
    @InjectDataSource() private readonly primary: DataSource,
    @Inject(APP_CONFIG) private readonly config: ReplicaConfig,
  ) {}

  get configured(): boolean {
    return Boolean(this.config.databaseReplicaUrl);
  }

  /**
   * Where a read that must see everything committed until now runs: the replica once it has
   * replayed the primary's current WAL position, else the primary.
   */
  async source(): Promise<DataSource> {
    if (!this.configured || Date.now() < this.avoidUntil) return this.primary;
    try {
      const [{ lsn }] = await currentManager(this.primary).query('SELECT pg_current_wal_lsn()::text AS lsn');
      const wait = this.config.databaseReplicaMaxWaitMs;
      const caughtUp = await bounded(this.caughtUp(String(lsn), Date.now() + wait), wait);
      if (caughtUp) return caughtUp;
    } catch (err) {
      // The primary's own failure is the read's: it would fail there too.
      if (!(err instanceof ReplicaError)) throw err;
    }
    this.avoid('behind or unreachable');
    return this.primary;
  }

  /**
   * Runs `read` on `db`; when `db` is the replica and it fails as a database that is away (or
   * cancels the read for a conflict with its replay), runs it again on the primary. Reads only.
   */
  async read<T>(db: DataSource, read: (db: DataSource) => Promise<T>): Promise<T> {
    if (db === this.primary) return read(db);
    try {
      return await read(db);
    } catch (err) {
      if (!databaseUnavailableKind(err) && !isRecoveryConflict(err)) throw err;
      this.avoid('failed a read');
      return read(this.primary);
    }
  }

  /** For /readyz: whether the replica answers, and how far behind the primary it replays. */
  async status(): Promise<ReplicaStatus | undefined> {
    if (!this.configured) return undefined;
    try {
      const lagMs = await bounded(this.lag(), 2000);
      if (lagMs === undefined) return { ok: false };
      return { ok: lagMs <= this.config.databaseReplicaMaxWaitMs, lagMs };
    } catch {
      return { ok: false };
    }
  }

  async onModuleDestroy(): Promise<void> {
    const db = await this.opening?.catch(() => undefined);
    if (db?.isInitialized) await db.destroy();
  }

  private async lag(): Promise<number> {
    const db = await this.open();
    const [row] = await db.query(
      `SELECT CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
              ELSE floor(extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000) END AS lag`,
    );
    return Number(row?.lag ?? 0);
  }

  /** The replica once it has replayed `lsn` (polled until `deadline`; a hung query is bounded by the caller). */
  private async caughtUp(lsn: string, deadline: number): Promise<DataSource> {
    const db = await this.open();
    while (Date.now() < deadline) {
      const [row] = await db.query('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn]).catch((err) => {
        throw new ReplicaError(err);
      });
      // NULL: not a standby at all (a primary given as replica): not known to hold our writes.
      if (row?.ok === null) throw new ReplicaError('not in recovery');
      if (row?.ok) return db;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    throw new ReplicaError('behind');
  }

  private open(): Promise<DataSource> {
    this.opening ??= new DataSource(
      dataSourceOptions(this.config.databaseReplicaUrl!, this.config.databasePoolSize, true, {
        kind: 'request',
        timeouts: this.config.databaseTimeouts,
        pooler: this.config.databasePooler,
      }),
    )
      .initialize()
      .catch((err) => {
        this.opening = undefined;
        throw new ReplicaError(err);
      });
    return this.opening;
  }

  private avoid(why: string): void {
    if (Date.now() >= this.avoidUntil) this.logger.warn(`read replica ${why}: long reads go to the primary`);
    this.avoidUntil = Date.now() + REPLICA_RETRY_MS;
  }
}

class ReplicaError extends Error {
  constructor(cause: unknown) {
    super('read replica unavailable', { cause });
  }
}

/** SQLSTATE 40001 with the replica's wording: a standby cancelled a read that held back its replay. */
function isRecoveryConflict(err: unknown): boolean {
  const e = err as { code?: string; driverError?: { code?: string }; message?: string };
  return (e.code ?? e.driverError?.code) === '40001' && /conflict with recovery/i.test(String(e.message));
}

/** `p`, or a ReplicaError after `ms` (a paused replica never answers: its connection is left to its own timers). */
function bounded<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new ReplicaError('timeout')), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e instanceof ReplicaError ? e : new ReplicaError(e))),
    );
  });
}

/** The read replica for the whole app (LongReads, /readyz); absent from the CLI, where reads use the primary. */
@Global()
@Module({ providers: [ReadReplica], exports: [ReadReplica] })
export class ReadReplicaModule {}
