import { randomUUID } from 'node:crypto';
import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { Principal } from '../common/access/principal';
import { ApiError } from '../common/errors/api-error';
import { currentManager } from '../database/transaction';
import { SHARED_SESSION_MARK } from '../database/embedded-postgres';
import { LongReads } from '../responses/long-reads';
import { jobTag, runAsJob } from './current-job';

export type JobStatus = 'working' | 'completed' | 'failed' | 'cancelled';

/** A job as get_job, REST's 202 and MCP's tasks/get tell it. */
export interface Job {
  jobId: string;
  tool: string;
  status: JobStatus;
  statusMessage?: string;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
  /** How long to wait before polling again. */
  pollIntervalMs: number;
  /** completed: the tool's answer, as the call would have given it. */
  result?: unknown;
  /** failed: the tool's refusal ({ code, message, hint, details? }), as the call would have given it. */
  error?: { code: string; message: string; hint: string };
}

/** How long a job and its result are kept after it starts. */
export const JOB_TTL_MS = 60 * 60 * 1000;
export const JOB_POLL_INTERVAL_MS = 1000;
/** How often an instance running jobs looks for a cancel of them made through another instance. */
const CANCEL_CHECK_MS = 500;

interface JobRow {
  id: string;
  tool: string;
  status: JobStatus;
  status_message: string | null;
  result: unknown;
  error: Job['error'] | null;
  created_at: Date;
  updated_at: Date;
  expires_at: Date;
}

/**
 * Long tool calls in the background (issue 49): summarize_responses over partials and the like,
 * started by a client that consents (MCP's tasks extension, REST's `Prefer: respond-async`).
 * The job's state is a row of `jobs`, so a poll or a cancel reaches it through any instance; the
 * work runs on the instance that started it, in a long-read slot of the workspace taken before
 * the job exists (429 when none is free, as the call would be) and given back when the work ends
 * or the job is cancelled, whichever comes first. A cancel made through another instance is seen
 * here within CANCEL_CHECK_MS. A cancelled job's work is dropped: what it still reads (one
 * statement, bounded by FILTERED_READ_MS) is not stored. An instance that stops mid-job leaves it
 * `working` until it expires (JOB_TTL_MS).
 */
@Injectable()
export class JobsService implements OnModuleDestroy {
  private readonly logger = new Logger('Jobs');
  /** The jobs running on this instance: what cancels one (gives its slot back, drops its result). */
  private readonly running = new Map<string, () => void>();
  private watch?: NodeJS.Timeout;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly longReads: LongReads,
  ) {}

  onModuleDestroy() {
    clearInterval(this.watch);
  }

  /** Starts `work` as a job of the principal's workspace; resolves once the job can be polled. */
  async start(principal: Principal, tool: string, statusMessage: string, work: () => Promise<unknown>): Promise<Job> {
    const workspaceId = principal.workspace.id;
    const giveBack = this.longReads.take(workspaceId);
    const id = `job_${randomUUID().replaceAll('-', '')}`;
    let row: JobRow;
    try {
      const sql = currentManager(this.db);
      await sql.query(`DELETE FROM jobs WHERE expires_at < now()`);
      [row] = await sql.query(
        `INSERT INTO jobs (id, workspace_id, tool, status_message, expires_at)
         VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5)) RETURNING *`,
        [id, workspaceId, tool, statusMessage, JOB_TTL_MS / 1000],
      );
    } catch (err) {
      giveBack();
      throw err;
    }
    let over = false;
    const aborter = new AbortController();
    const end = () => {
      over = true;
      aborter.abort();
      giveBack();
      this.running.delete(id);
      if (!this.running.size) {
        clearInterval(this.watch);
        this.watch = undefined;
      }
    };
    this.running.set(id, end);
    this.watch ??= setInterval(() => void this.seeCancels(), CANCEL_CHECK_MS).unref();
    void runAsJob({ id, signal: aborter.signal }, () => this.longReads.within(workspaceId, work))
      .then(
        (result) => ({ status: 'completed', result, error: null }),
        (err: unknown) => ({ status: 'failed', result: null, error: this.refusalOf(err, id) }),
      )
      .then(async (outcome) => {
        if (over) return;
        end();
        await currentManager(this.db).query(
          `UPDATE jobs SET status = $2, result = $3, error = $4, status_message = NULL, updated_at = now()
           WHERE id = $1 AND status = 'working'`,
          [id, outcome.status, JSON.stringify(outcome.result), outcome.error && JSON.stringify(outcome.error)],
        );
      })
      .catch((err: unknown) => this.logger.error({ msg: 'job outcome not stored', jobId: id }, String(err)));
    return view(row);
  }

  /** The job, if it is the workspace's and not expired; else 404 not_found. */
  async get(workspaceId: string, jobId: string): Promise<Job> {
    const [row] = (await currentManager(this.db).query(
      `SELECT * FROM jobs WHERE id = $1 AND workspace_id = $2 AND expires_at > now()`,
      [jobId, workspaceId],
    )) as JobRow[];
    if (!row) throw notFound(jobId);
    return view(row);
  }

  /** Cancels a working job (its slot is given back now, its work dropped); a finished one stays as it is. */
  async cancel(workspaceId: string, jobId: string): Promise<Job> {
    const rows = (await currentManager(this.db).query(
      `WITH cancelled AS (
         UPDATE jobs SET status = 'cancelled', status_message = 'Cancelled by the client.', updated_at = now()
         WHERE id = $1 AND workspace_id = $2 AND status = 'working' AND expires_at > now() RETURNING id
       ) SELECT id FROM cancelled`,
      [jobId, workspaceId],
    )) as Array<{ id: string }>;
    if (rows.length) {
      this.running.get(jobId)?.();
      await this.stopStatement(jobId);
    }
    return this.get(workspaceId, jobId);
  }

  /**
   * Cancels the statement a cancelled job is running, on whichever instance it runs: the backend
   * whose active query carries the job's tag (jobTag: exports' statements). Not on the embedded
   * database (one session, no pg_cancel_backend): there the work stops between its batches.
   */
  private async stopStatement(jobId: string): Promise<void> {
    if (String((this.db.options as { url?: string }).url ?? '').includes(SHARED_SESSION_MARK)) return;
    try {
      await currentManager(this.db).query(
        `SELECT pg_cancel_backend(pid) FROM pg_stat_activity
          WHERE state = 'active' AND pid <> pg_backend_pid() AND datname = current_database() AND position($1 in query) > 0`,
        [jobTag(jobId)],
      );
    } catch (err) {
      this.logger.warn({ msg: 'cancel of a job statement failed', jobId, reason: String(err) });
    }
  }

  /** Ends the jobs running here that were cancelled through another instance. */
  private async seeCancels(): Promise<void> {
    const ids = [...this.running.keys()];
    if (!ids.length) return;
    try {
      const rows = (await currentManager(this.db).query(
        `SELECT id FROM jobs WHERE id = ANY($1) AND status = 'cancelled'`,
        [ids],
      )) as Array<{ id: string }>;
      for (const { id } of rows) this.running.get(id)?.();
    } catch (err) {
      this.logger.warn({ msg: 'cancel check failed', reason: String(err) });
    }
  }

  private refusalOf(err: unknown, jobId: string): Job['error'] {
    if (err instanceof ApiError) return err.toJSON().error;
    this.logger.error({ msg: 'job failed', jobId }, err instanceof Error ? err.stack : String(err));
    return new ApiError('internal_error').toJSON().error;
  }
}

function view(row: JobRow): Job {
  return {
    jobId: row.id,
    tool: row.tool,
    status: row.status,
    ...(row.status_message ? { statusMessage: row.status_message } : {}),
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
    expiresAt: new Date(row.expires_at).toISOString(),
    pollIntervalMs: JOB_POLL_INTERVAL_MS,
    ...(row.status === 'completed' ? { result: row.result } : {}),
    ...(row.status === 'failed' && row.error ? { error: row.error } : {}),
  };
}

function notFound(jobId: string): ApiError {
  return new ApiError('not_found', {
    message: `No job "${jobId}" in this workspace (jobs are kept an hour after they start).`,
    hint: 'Use the jobId a call answered with 202 (or an MCP task id); start the call again if the job expired.',
  });
}

/**
 * The calls worth a job when the client consents, with what the job says while it works:
 * summaries that read the partial responses too (status partial or all), which scan the form's
 * rows instead of reading maintained totals, and exports (the job reads them whole into a stored
 * file). Undefined: the call answers as it always does.
 */
/** The tools whose calls may run as a job (OpenAPI documents their 202). */
export const JOB_TOOLS = ['summarize_responses', 'export_responses'];

export function jobWorthy(tool: string, args: unknown): string | undefined {
  const { status, publicId } = (args ?? {}) as { status?: string; publicId?: string };
  if (tool === 'summarize_responses' && (status === 'partial' || status === 'all'))
    return `Summarizing the ${status === 'all' ? 'completed and partial' : 'partial'} responses of ${publicId}.`;
  if (tool === 'export_responses') return `Exporting the responses of ${publicId}.`;
  return undefined;
}
