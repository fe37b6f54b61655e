import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Readable, Writable } from 'node:stream';
import { DataSource } from 'typeorm';
import { CREDENTIAL_CACHE_MS } from '../auth/credential-verifier';
import type { Principal } from '../common/access/principal';
import { AuditService } from '../audit/audit.service';
import { ApiError } from '../common/errors/api-error';
import { TtlCache } from '../common/ttl-cache';
import { APP_CONFIG, AppConfig } from '../config/config';
import { currentManager } from '../database/transaction';
import { FormRecord, FormsService } from '../forms/forms.service';
import { checkResponseFilter, ResponseFilter, responseFilterSql } from '../responses/response-filter';
import { LongReads } from '../responses/long-reads';
import { ResponseSequencer } from '../responses/response-sequencer';
import { AnswersBy, partialViewer, ResponseStatus, responseViewer } from '../responses/responses.service';
import { fileKeys } from '../files/file-answers';
import { FileAnswers } from '../files/file-answers.service';
import { contentDisposition, csvLayout } from './csv';
import { PartPool } from './copy-rows';
import { csvCopySql, withLiterals } from './csv-sql';
import { EXPORT_LINK_TTL_MS, ExportFormat, ExportGrant, ExportLinkStore } from './export-link';
import { EXPORT_PART_ROWS, ExportRow, ExportsRepository } from './exports.repository';
import { RunningJob, stepsAsJob } from '../jobs/current-job';
import { JOB_TTL_MS } from '../jobs/jobs.service';
import { FileStorage } from '../storage/file-storage';

/** How many partial responses an export reads per statement (see partialChunks). */
const EXPORT_PARTIAL_BATCH = 1000;

/** The path that serves export links (the link itself travels in the query, which no log line holds). */
export const EXPORT_PATH = '/api/v1/exports/download';

/** A download's headers and budget, before its body. */
function downloadOf(grant: ExportGrant, form: FormRecord): ExportDownload {
  return {
    headers: {
      'Content-Type': CONTENT_TYPES[grant.fmt],
      'Content-Disposition': contentDisposition(form.title, grant.fmt),
      'Cache-Control': 'private, no-store',
    },
    credentialKey: grant.c.b,
  };
}

/** Where the files of export jobs are stored: `<prefix><workspaceId>/<ms>-<jobId>`. */
const STORED_PREFIX = 'exports/';
/** How often each instance sweeps the stored files of expired export jobs (with the responses they hold). */
const STORED_SWEEP_MS = 10 * 60 * 1000;

/** What an export reads and how it writes it. */
export interface ExportOptions {
  format: ExportFormat;
  answersBy: AnswersBy;
  filter: ResponseFilter;
  status?: ResponseStatus;
}

/** A download ready to stream: its headers and its body. */
export interface ExportDownload {
  headers: Record<string, string>;
  /** None for HEAD. */
  body?: Readable;
  /** The budget its request spends: the credential that made the link. */
  credentialKey: string;
}

const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8; header=present',
  ndjson: 'application/x-ndjson; charset=utf-8',
};

/**
 * How often a download under way is looked at: its credential and form (through the
 * CREDENTIAL_CACHE_MS cache, so a revocation ends it within 4.5 s, under the 5 s the docs promise)
 * and its client's reading (see watch).
 */
export const EXPORT_WATCH_MS = 500;

/** An expired, altered or no longer valid link: 404 whatever the reason, so a link tells nothing. */
export function linkNotFound(): ApiError {
  return new ApiError('not_found', {
    message:
      'This export link is not valid: it expired (links serve 15 minutes), was altered, or its credential or form is gone.',
    hint: 'Call export_responses again for a fresh link.',
  });
}

/**
 * Exports: making the link (export_responses), and serving it (GET EXPORT_PATH) as a stream
 * read from PostgreSQL in batches by key.
 *
 * Why batches by key rather than one cursor or one COPY of everything: either holds a session (a
 * cursor a transaction too) for the whole download, which a slow client can make last as long as
 * it likes (the statement or idle-in-transaction timeout would end it, and the embedded database's
 * only session would be taken). Here each batch is one short statement on a pooled connection
 * (for CSV a COPY of the batch: see csvCopySql), returned at once: the next batch is read only
 * when the client has taken the previous one (the stream's backpressure), so memory stays at
 * about two batches (one read ahead), and a client that goes away stops the reading (the stream is
 * destroyed, and the generator reading it ends after the statement in flight, if any).
 *
 * A download reads the responses sequenced when it starts (responses waiting for their seq are
 * sequenced first, as list_responses does), in submission order, and none that arrive during it.
 * A timer, not the batches' progress, ends it (cut short: no final chunk) when the link's
 * credential no longer acts or its form is gone, or when its client has taken nothing for
 * EXPORT_IDLE_TIMEOUT_MS: a client that stops reading holds a long-read slot only that long.
 */
@Injectable()
export class ExportsService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Exports');
  private sweeper?: NodeJS.Timeout;
  private readonly access = new TtlCache<boolean>(CREDENTIAL_CACHE_MS);
  /**
   * The range of seq one batch reads, by format (tests set it lower to see several batches). A CSV
   * batch is bytes (about 160 KB per 1,000 responses) and its statement's planning costs about a
   * millisecond, so it reads 10,000; NDJSON's, 1,000 (bytes too, unless the form takes files: see line).
   */
  batchSeqRange: Record<ExportFormat, number> = { csv: 10_000, ndjson: 1000 };
  /** Downloads being read now (tests watch a disconnect end one). */
  openDownloads = 0;
  /** How long a download's client may take nothing before it is ended (EXPORT_IDLE_TIMEOUT_MS; tests set it). */
  idleMs: number;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: ExportsRepository,
    private readonly forms: FormsService,
    private readonly sequencer: ResponseSequencer,
    private readonly links: ExportLinkStore,
    private readonly longReads: LongReads,
    private readonly audit: AuditService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly files: FileAnswers,
    private readonly storage: FileStorage,
  ) {
    this.idleMs = config.exportIdleMs;
  }

  onModuleInit() {
    // Not only when the next export job runs: a file of deleted responses must not outlive its job.
    this.sweeper = setInterval(
      () => void this.sweepStored().catch((err: Error) => this.logger.warn(`export sweep failed: ${err.message}`)),
      STORED_SWEEP_MS,
    ).unref();
  }

  onModuleDestroy() {
    clearInterval(this.sweeper);
  }

  /**
   * export_responses: a link to the form's responses under the filter, acting for `principal`.
   * The filter is checked now (400 at its path), and stored as checked (blocks by id).
   */
  async createLink(
    principal: Principal,
    publicId: string,
    opts: ExportOptions,
  ): Promise<{ url: string; expiresAt: string; format: ExportFormat }> {
    const grant = await this.grantFor(principal, publicId, opts);
    return this.linkTo(grant);
  }

  /**
   * export_responses as a job (issue 49: a client that consented, see jobWorthy): the export is
   * read whole now, in the job's long-read slot, into a stored file, and the answer is a link to
   * that file (the same checks at download as any link). A cancel (`job.signal`) ends the reading
   * between batches and the statement running (JobsService cancels it by the job's tag); nothing
   * is kept then. Stored files go with the job's expiry (swept every 10 minutes and before each export job).
   */
  async exportAsJob(
    principal: Principal,
    publicId: string,
    opts: ExportOptions,
    job: RunningJob,
  ): Promise<{ url: string; expiresAt: string; format: ExportFormat }> {
    const grant = await this.grantFor(principal, publicId, opts);
    await this.sweepStored();
    const { body } = await this.open(grant, false, undefined, job);
    const stop = () => body!.destroy(new Error(`job ${job.id} cancelled`));
    job.signal.addEventListener('abort', stop, { once: true });
    const key = `${STORED_PREFIX}${grant.w}/${Date.now()}-${job.id}`;
    try {
      await this.storage.write(key, body!, {
        contentType: CONTENT_TYPES[grant.fmt],
        maxBytes: Number.MAX_SAFE_INTEGER,
      });
    } finally {
      job.signal.removeEventListener('abort', stop);
    }
    if (job.signal.aborted) {
      await this.storage.delete([key]);
      throw new Error(`job ${job.id} cancelled`);
    }
    return this.linkTo({ ...grant, k: key });
  }

  /** Deletes stored job exports older than a job lives (their key starts with the time they were made). */
  private async sweepStored(): Promise<void> {
    const before = Date.now() - JOB_TTL_MS;
    const old: string[] = [];
    for await (const key of this.storage.list(STORED_PREFIX)) {
      const made = Number(/\/(\d+)-[^/]+$/.exec(key)?.[1]);
      if (made < before) old.push(key);
    }
    if (old.length) await this.storage.delete(old);
  }

  /** The grant of a link to the form's responses under the filter, acting for `principal`; the export is audited. */
  private async grantFor(principal: Principal, publicId: string, opts: ExportOptions): Promise<ExportGrant> {
    const form = await this.forms.get(principal.workspace.id, publicId);
    const q = checkResponseFilter(form, opts.filter);
    // Never longer than the credential itself lives.
    const exp = Math.min(this.links.now() + EXPORT_LINK_TTL_MS, principal.expiresAt?.getTime() ?? Infinity);
    const { kind, id } = principal.credential;
    const grant: ExportGrant = {
      w: principal.workspace.id,
      c: {
        k: kind,
        i: id,
        b: principal.credentialKey,
        // An OAuth access token is recognised by its grant and its expiry (see credentialActs).
        ...(kind === 'oauth' && principal.expiresAt ? { x: Math.floor(principal.expiresAt.getTime() / 1000) } : {}),
      },
      f: form.id,
      p: form.publicId,
      fmt: opts.format,
      a: opts.answersBy,
      q,
      exp,
      ...(opts.status && opts.status !== 'completed' ? { s: opts.status } : {}),
    };
    // Who took which responses out: recorded with the filter as checked, never the link (a credential).
    await this.audit.record(currentManager(this.db), principal, 'responses.export', form.id, {
      publicId: form.publicId,
      format: opts.format,
      answersBy: opts.answersBy,
      ...(opts.status && opts.status !== 'completed' ? { status: opts.status } : {}),
      ...q,
      expiresAt: new Date(exp).toISOString(),
    });
    return grant;
  }

  private async linkTo(grant: ExportGrant): Promise<{ url: string; expiresAt: string; format: ExportFormat }> {
    const link = await this.links.create(grant);
    return {
      url: `${this.config.publicUrl}${EXPORT_PATH}?token=${link}`,
      expiresAt: new Date(grant.exp).toISOString(),
      format: grant.fmt,
    };
  }

  /** The grant of a link, or 404 (expired, altered, not a link). */
  async grantOf(token: unknown): Promise<ExportGrant> {
    const grant = await this.links.find(token);
    if (!grant) throw linkNotFound();
    return grant;
  }

  /**
   * The download a link grants, checked as of now: its credential still acts on its workspace and
   * its form is still there (else 404). Nothing is read from the responses until the body is.
   * `headOnly` (HEAD): the same checks and headers, no body, no slot. `sink`: the response the
   * body will be piped into, whose written parts the download then reuses (see PartPool).
   */
  async open(grant: ExportGrant, headOnly = false, sink?: Writable, job?: RunningJob): Promise<ExportDownload> {
    const form = await this.formOf(grant);
    if (grant.k) return this.openStored(grant, form, headOnly);
    const params: unknown[] = [undefined, undefined, undefined]; // $1..$3: the form and the range
    let sql: string;
    try {
      sql = responseFilterSql(form, grant.q, params, 'r');
    } catch (err) {
      // The form changed since (a filtered block removed, retyped): the link no longer fits it.
      if (err instanceof ApiError) throw linkNotFound();
      throw err;
    }
    const download = downloadOf(grant, form);
    if (headOnly) return download;
    // A download is a long read of its workspace: it takes a slot until its stream closes (read to
    // the end, cut, or left by its client), or 429 when the workspace's slots are taken.
    const giveBack = this.longReads.take(grant.w);
    try {
      // Responses committed before the download wait for their seq: give it, then read up to the last.
      await this.sequencer.settle(form.id);
      const upTo = grant.s === 'partial' ? '0' : await this.repo.lastSeq(currentManager(this.db), form.id);
      // The batches read the replica once it holds everything up to upTo, else the primary (LongReads).
      const on = await this.longReads.source();
      // CSV: the records are written by PostgreSQL's COPY (see csvCopySql), the filter as literals;
      // those of a form with file questions here (their links are signed here, per batch).
      const literals = [form.id, ...params.slice(1)];
      const status = { status: grant.s !== undefined };
      const copy =
        grant.fmt === 'csv' && !fileKeys(form.blocks).length
          ? (where: string) => csvCopySql(form, withLiterals(where, literals), status)
          : undefined;
      let pool: PartPool | undefined;
      const filtered = { sql, params: params.slice(3), literals };
      const read = this.chunks(grant, form, upTo, filtered, copy, on, () => pool, job?.signal);
      // A job's batches run as the job (their statements carry its tag), and stop once it is cancelled.
      const chunks = job ? stepsAsJob(job, read) : read;
      // Bytes, not objects: the stream asks for the next batch once its 64 KiB buffer has drained.
      const body = Readable.from(chunks, { objectMode: false, highWaterMark: 64 * 1024 });
      if (sink) pool = new PartPool(body, sink);
      const unwatch = this.watch(grant, body);
      body.once('close', () => {
        unwatch();
        giveBack();
      });
      return { ...download, body };
    } catch (err) {
      giveBack();
      throw err;
    }
  }

  /** A job's stored export (see exportAsJob): its bytes as stored, the link's checks made. */
  private async openStored(grant: ExportGrant, form: FormRecord, headOnly: boolean): Promise<ExportDownload> {
    const download = downloadOf(grant, form);
    if (headOnly) return download;
    const stored = await this.storage.read(grant.k!).catch(() => {
      throw linkNotFound();
    });
    return { ...download, body: Readable.from(stored as AsyncIterable<Buffer>, { objectMode: false }) };
  }

  private async *chunks(
    grant: ExportGrant,
    form: FormRecord,
    upTo: string,
    filter: { sql: string; params: unknown[]; literals: unknown[] },
    copy: ((where: string) => string) | undefined,
    on: Awaited<ReturnType<LongReads['source']>>,
    poolOf: () => PartPool | undefined,
    stopped?: AbortSignal,
  ): AsyncGenerator<string | Buffer> {
    this.openDownloads++;
    const pool = poolOf();
    /** Every chunk goes out through here, so that the pool counts the body's bytes as the body does. */
    const out = <T extends string | Buffer>(chunk: T): T => {
      pool?.handing(chunk);
      return chunk;
    };
    let ahead: Promise<Array<string | Buffer>> | undefined;
    try {
      // NDJSON's lines are get_response's objects; CSV's records come written from PostgreSQL, or
      // (a form with files) from get_response's objects keyed by block id, as csvLayout reads them.
      const csv = grant.fmt === 'csv' ? csvLayout(form, grant.a, { status: grant.s !== undefined }) : undefined;
      const answersBy = csv ? 'id' : grant.a;
      const view = copy ? undefined : responseViewer(form, answersBy);
      // Without file answers (whose links are signed per batch), each line is written as its row
      // arrives, into bytes: no object or string of a batch outlives its row (see lineRows).
      const line =
        view && !csv && !fileKeys(form.blocks, grant.a === 'ref').length
          ? (row: ExportRow) => `${JSON.stringify(view(row))}\n`
          : undefined;
      // The first bytes go out before any response is read.
      if (csv) yield out(csv.head);
      const last = BigInt(upTo);
      const range = BigInt(this.batchSeqRange[grant.fmt]);
      let after = BigInt(0);
      /** The next batch, as text or bytes in parts, started before the previous batch is written (see below). */
      const read = (): Promise<Array<string | Buffer>> | undefined => {
        // A cancelled job's export reads no further batch (not even the one read ahead).
        if (after >= last || stopped?.aborted) return undefined;
        const end = after + range < last ? after + range : last;
        const batch = { after: after.toString(), upTo: end.toString() };
        after = end;
        // Values as literals (COPY and lineRows' simple query take no parameters): the form's id and the range are ours.
        const where = `r.form_id = $1 AND r.seq > ${BigInt(batch.after)} AND r.seq <= ${BigInt(batch.upTo)} AND (${filter.sql})`;
        if (copy) return on((db) => this.repo.readCsvBatch(currentManager(db), copy(where), pool));
        if (line)
          return on((db) =>
            this.repo.readLineBatch(currentManager(db), withLiterals(where, filter.literals), line, pool),
          );
        return on((db) => this.repo.readBatch(currentManager(db), form.id, batch, filter)).then(async (rows) => {
          const views = rows.map(view!);
          // File answers with links bound to the link's credential, as get_response shows them.
          await this.files.show(views, form, answersBy, { w: grant.w, c: grant.c, until: grant.exp });
          // Parts of EXPORT_PART_ROWS lines (or CSV records): strings that die young.
          const parts: string[] = [];
          for (let i = 0; i < views.length; i += EXPORT_PART_ROWS)
            parts.push(
              views
                .slice(i, i + EXPORT_PART_ROWS)
                .map((v) => (csv ? csv.record(v) : `${JSON.stringify(v)}\n`))
                .join(''),
            );
          return parts;
        });
      };
      // One batch read ahead: the database reads batch n+1 while batch n is written, so reading
      // and writing overlap; memory stays at about two batches.
      ahead = read();
      while (ahead) {
        const parts = await ahead;
        ahead = read();
        for (const part of parts) if (part) yield out(part);
      }
      if (grant.s) for await (const part of this.partialChunks(grant, form, filter, on)) yield out(part);
    } catch (err) {
      // The answer's headers are gone: the stream is cut (the client sees no final chunk), and
      // Fastify logs nothing of a cut stream here (request logging is ours): say why, without the link.
      if (!(err instanceof ApiError)) {
        this.logger.warn({
          msg: 'export cut short',
          form: grant.p,
          error: err instanceof Error ? err.message : String(err),
        });
      }
      throw err;
    } finally {
      // A client that went away leaves the batch read ahead in flight: it ends on its own, and its
      // failure, if any, is nobody's to handle.
      ahead?.catch(() => undefined);
      this.openDownloads--;
    }
  }

  /**
   * The form's partial responses (issue 36) after the completed ones, in start (id) order, in
   * batches keyed by id, written in JS (get_response's objects, or csvLayout's records, which read
   * answers by block id).
   */
  private async *partialChunks(
    grant: ExportGrant,
    form: FormRecord,
    filter: { sql: string; params: unknown[] },
    on: Awaited<ReturnType<LongReads['source']>>,
  ): AsyncGenerator<string> {
    const csv = grant.fmt === 'csv' ? csvLayout(form, grant.a, { status: true }) : undefined;
    const answersBy = csv ? 'id' : grant.a;
    const view = partialViewer(form, answersBy);
    for (let after: string | null = null; ;) {
      const rows = await on((db) =>
        this.repo.readPartialBatch(currentManager(db), form.id, after, EXPORT_PARTIAL_BATCH, filter),
      );
      if (!rows.length) return;
      after = rows[rows.length - 1].id;
      const views = rows.map(view);
      await this.files.show(views, form, answersBy, { w: grant.w, c: grant.c, until: grant.exp });
      yield views.map((v) => (csv ? csv.record(v) : `${JSON.stringify(v)}\n`)).join('');
      if (rows.length < EXPORT_PARTIAL_BATCH) return;
    }
  }

  /**
   * Ends `body` (destroyed with the reason: Fastify then cuts the answer) when the link's credential
   * no longer acts or its form is gone, or when its client has taken nothing for idleMs: the
   * stream is paused (the socket's buffers are full, so the pipe stopped taking) all that time.
   * Checked every EXPORT_WATCH_MS whatever the batches do. Returns what stops the watching.
   */
  private watch(grant: ExportGrant, body: Readable): () => void {
    let pausedAt: number | undefined;
    body.on('pause', () => (pausedAt ??= Date.now()));
    body.on('resume', () => (pausedAt = undefined));
    let checking = false;
    const timer = setInterval(() => {
      if (pausedAt !== undefined && Date.now() - pausedAt >= this.idleMs) {
        this.logger.log({ msg: 'export ended: its client took nothing', form: grant.p, idleMs: this.idleMs });
        body.destroy(new Error(`the client took nothing for ${this.idleMs} ms`));
        return;
      }
      if (checking) return;
      checking = true;
      this.formOf(grant).then(
        () => (checking = false),
        (err: unknown) => body.destroy(err instanceof Error ? err : new Error(String(err))),
      );
    }, EXPORT_WATCH_MS);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** The link's form, as long as its credential acts on its workspace and the form is still there; else 404. */
  private async formOf(grant: ExportGrant): Promise<FormRecord> {
    const key = `${grant.w}\u0000${grant.c.k}\u0000${grant.c.i}\u0000${grant.c.x ?? ''}`;
    let acts = this.access.get(key);
    if (acts === undefined) {
      acts = await this.repo.credentialActs(currentManager(this.db), grant);
      this.access.set(key, acts);
    }
    if (!acts) {
      this.logger.debug({ msg: 'export link refused: its credential no longer acts', credential: grant.c.i });
      throw linkNotFound();
    }
    const form = await this.forms.get(grant.w, grant.p).catch((err: unknown) => {
      throw err instanceof ApiError ? linkNotFound() : err;
    });
    if (form.id !== grant.f) throw linkNotFound();
    return form;
  }
}
