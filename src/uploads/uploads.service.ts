/**
 * Uploads (issue 35): a file sent for a file_upload block is `pending` until a response names it,
 * then held by that response and deleted with it (rows and objects). See docs/tools.md, "Files".
 */
import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Readable } from 'node:stream';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager, EntitySubscriberInterface, QueryRunner } from 'typeorm';
import type { Plan } from '../common/access/roles';
import { ApiError, ErrorDetail, pointerSegment } from '../common/errors/api-error';
import { randomBase62 } from '../common/ids';
import { currentManager } from '../database/transaction';
import { inBatches } from '../database/in-batches';
import { APP_CONFIG, AppConfig } from '../config/config';
import { Block, FILE_SIZE_LIMIT_MB, UPLOAD_ID } from '../forms/blocks';
import { FileStorage, FileTooLargeError, objectKey, StoredBytes, UploadIdleError } from '../storage/file-storage';
import {
  accepts,
  cleanFilename,
  markupRefusal,
  normalizeContentType,
  SNIFF_BYTES,
  typeMismatch,
  typeWords,
} from './file-checks';
import { UploadKeyParts, UploadRow, UploadsRepository } from './uploads.repository';

export interface UploadForm {
  id: string;
  publicId: string;
  blocks: Block[];
}

export interface CreateUploadInput {
  workspaceId: string;
  plan: Plan;
  form: UploadForm;
  /** The block's id or ref. */
  block: string;
  filename: string;
  contentType: string;
  /** Bytes, as declared. */
  size: number;
  /**
   * The respondent page's client (a keyed hash of its IP, never the IP): its pending uploads and
   * the form's are bounded (config anonymousLimits); absent for the tools (a credential's caller).
   */
  client?: Buffer;
}

export interface CreatedUpload {
  uploadId: string;
  url: string;
  method: 'PUT';
  headers: Record<string, string>;
  expiresAt: string;
}

export interface UploadDescription {
  uploadId: string;
  name: string;
  size: number;
  contentType: string;
}

export interface AttachInput {
  workspaceId: string;
  formId: string;
  /** The form's blocks as they are now: each file must fit its block's accept and maxSizeMb today. */
  blocks: Block[];
  responseId: string;
  /** Per file_upload block answered: its id, the key the caller used (for error paths), the ids. */
  files: Array<{ blockId: string; key: string; uploadIds: string[] }>;
}

/** 1 MB, as maxSizeMb and the plans count it. */
export const MB = 1024 * 1024;
/** The largest file create_upload takes inline (contentBase64); larger ones go by URL. */
export const CONTENT_LIMIT_BYTES = 5 * MB;
/** An upload no response names within this long is deleted (rows and objects). */
export const PENDING_HOURS = 24;
const SWEEP_EVERY_MS = 10 * 60_000;
/** Objects without a row are looked for by listing the whole store: less often. */
const ORPHANS_EVERY_MS = 60 * 60_000;
const SWEEP_BATCH = 500;
/**
 * The keys the service makes (S3 adds `.upload` while a presigned PUT's bytes wait; a disk write in
 * progress is `.part`, stale only when a crash left it): the orphan sweep touches no other object.
 */
const OUR_KEY = /^[0-9a-f-]{36}\/[0-9a-f-]{36}\/(upl_[A-Za-z0-9]{22})(\.upload|\.part)?$/;

const newUploadId = () => `upl_${randomBase62(22)}`;

/** The largest file a block takes on a plan, in bytes: the smaller of the block's and the plan's limit. */
export function fileLimitBytes(block: Block, plan: Plan): number {
  return Math.min(block.maxSizeMb ?? FILE_SIZE_LIMIT_MB.free, FILE_SIZE_LIMIT_MB[plan]) * MB;
}

@Injectable()
export class UploadsService implements OnModuleInit, OnModuleDestroy, EntitySubscriberInterface {
  private readonly logger = new Logger('Uploads');
  private timers: NodeJS.Timeout[] = [];
  /** Object keys to delete once the transaction that deleted their rows commits (dropped on rollback). */
  private readonly afterCommit = new WeakMap<QueryRunner, string[]>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: UploadsRepository,
    private readonly storage: FileStorage,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit() {
    // Told of every commit and rollback (see afterTransactionCommit).
    this.db.subscribers.push(this);
    this.storage.listener = {
      startBytes: SNIFF_BYTES,
      admit: (key) => this.admit(key),
      received: (key, stored) => this.received(key, stored),
    };
    const every = (ms: number, what: string, run: () => Promise<unknown>) => {
      const timer = setInterval(
        () => void run().catch((err: Error) => this.logger.warn(`${what} failed: ${err.message}`)),
        ms,
      );
      timer.unref();
      this.timers.push(timer);
    };
    every(SWEEP_EVERY_MS, 'sweep', () => this.sweep());
    every(ORPHANS_EVERY_MS, 'orphan sweep', () => this.sweepOrphans());
  }

  onModuleDestroy() {
    this.timers.forEach(clearInterval);
  }

  /**
   * Before the disk endpoint reads a byte: an upload URL takes one body, once, while its upload
   * waits for it. Its upload gone (deleted with its response or form, or swept): 404; its bytes
   * already received (or refused): refused, so nothing reappears on disk.
   */
  private async admit(key: string): Promise<ApiError | undefined> {
    const row = await this.rowOfKey(key);
    if (!row) return uploadGone();
    if (row.storedSize !== null) return refusalOfReceived(row) ?? alreadySent();
    if (row.responseId) return alreadySent();
    return undefined;
  }

  /**
   * The disk endpoint stored a pending upload's bytes: their size and the type check's finding go
   * on its row, so naming it reads no file (the bytes of a key never change once stored). Bytes
   * that are not what the upload declared are deleted at once, the row keeping why (never
   * attached); bytes whose upload went meanwhile are deleted too.
   */
  private async received(key: string, stored: StoredBytes): Promise<ApiError | undefined> {
    const row = await this.rowOfKey(key);
    if (!row) {
      await this.storage.delete([key]);
      return uploadGone();
    }
    if (row.responseId) return undefined; // held meanwhile: attach checked the object itself
    return this.record(row, stored);
  }

  /** Records what arrived for a pending upload; its bytes deleted, and the refusal answered, when they are not taken. */
  private async record(row: UploadRow, stored: StoredBytes): Promise<ApiError | undefined> {
    const typeProblem = stored.size === row.size ? typeProblemOf(stored.start, row) : null;
    await this.repo.recordStored(currentManager(this.db), row.id, stored.size, typeProblem);
    const refused = refusalOfReceived({ ...row, storedSize: stored.size, typeProblem });
    if (refused) await this.storage.delete([keyOf(row)]);
    return refused;
  }

  private async rowOfKey(key: string): Promise<UploadRow | undefined> {
    const id = key.split('/').pop()!;
    const [row] = UPLOAD_ID.test(id) ? await this.repo.find(currentManager(this.db), [id]) : [];
    return row && keyOf(row) === key ? row : undefined;
  }

  /**
   * Whether the bytes sent to an upload's URL are taken, checked once they have all arrived:
   * undefined, or the refusal in plain words naming the file (`422 file_refused`: the upload can
   * then never be attached, its bytes deleted; `400` when nothing arrived yet; `404` for no such
   * upload of this form). The respondent page calls it from its own endpoint right after the
   * browser's PUT, so that a wrong file is said at once. On disk the PUT endpoint has checked the
   * bytes already (this reads the row); on S3 the object is sealed here, its head read and the
   * finding recorded, as the disk endpoint does, so that attaching reads no object again.
   */
  async verifyReceived(uploadId: string, formId: string): Promise<ApiError | undefined> {
    const [row] = UPLOAD_ID.test(uploadId) ? await this.repo.find(currentManager(this.db), [uploadId]) : [];
    if (!row || row.formId !== formId)
      return new ApiError('not_found', {
        message: 'No such upload exists for this form.',
        hint: 'Choose the file again: its upload was deleted, or never made.',
      });
    if (row.storedSize !== null) return refusalOfReceived(row);
    if (row.responseId) return undefined; // held: checked when attached
    const found = await this.checkObject(row);
    if (!found)
      return new ApiError('invalid_arguments', {
        message: `${row.name} has not arrived yet.`,
        hint: 'Send the file to its upload URL first, then ask again.',
        details: [{ path: '/uploadId', message: `${row.id}: no bytes stored yet` }],
      });
    return this.record(row, found);
  }

  /** A pending upload and where to send its bytes (valid 15 minutes; 5 on S3). */
  async create(input: CreateUploadInput): Promise<CreatedUpload> {
    const { block, name, contentType } = this.checkFile(input);
    const limit = fileLimitBytes(block, input.plan);
    if (input.size > limit)
      throw invalid(
        '/size',
        `is over this block's limit of ${limit} bytes (${limit / MB} MB)`,
        limitHint(block, input.plan),
      );
    if (input.client) await this.withinBounds(input.form.id, input.client, input.size);
    const uploadId = newUploadId();
    const expiresAt = new Date(Date.now() + this.storage.uploadUrlMinutes * 60_000);
    await this.repo.insert(currentManager(this.db), {
      id: uploadId,
      workspaceId: input.workspaceId,
      formId: input.form.id,
      blockId: block.id,
      name,
      contentType,
      size: input.size,
      clientHash: input.client,
    });
    const target = await this.storage.uploadTarget(objectKey(input.workspaceId, input.form.id, uploadId), {
      size: input.size,
      contentType,
      expiresAt,
    });
    return { uploadId, ...target, expiresAt: expiresAt.toISOString() };
  }

  /**
   * The same, but the bytes come through the service (the respondent page without JavaScript):
   * streamed to storage, which stops reading past the limit (413, nothing kept) or when the sender
   * stops (408). Bytes that contradict the declared type are deleted at once (400).
   */
  async createFromStream(
    input: Omit<CreateUploadInput, 'size'>,
    body: NodeJS.ReadableStream,
    path = '/file',
  ): Promise<{ uploadId: string; size: number }> {
    const { block, name, contentType } = this.checkFile(input);
    const limit = fileLimitBytes(block, input.plan);
    // Before any byte is read (its size is known only at the end): at least one more byte must fit.
    if (input.client) await this.withinBounds(input.form.id, input.client, 1);
    const uploadId = newUploadId();
    const key = objectKey(input.workspaceId, input.form.id, uploadId);
    let stored: StoredBytes;
    try {
      stored = await this.storage.write(key, body, { contentType, maxBytes: limit, startBytes: SNIFF_BYTES });
    } catch (err) {
      if (err instanceof FileTooLargeError)
        throw new ApiError('payload_too_large', {
          message: `The file is larger than this question takes: at most ${limit / MB} MB.`,
          hint: limitHint(block, input.plan),
        });
      if (err instanceof UploadIdleError)
        throw new ApiError('request_timeout', {
          message: `No bytes of the file arrived for ${err.idleMs / 1000} s: the upload was cut and nothing kept.`,
          hint: 'Send the form again.',
        });
      throw err;
    }
    const size = stored.size;
    const mismatch = typeMismatch(stored.start, contentType, name);
    try {
      if (mismatch)
        throw new ApiError('invalid_arguments', {
          message: `${name} ${mismatch}.`,
          details: [{ path, message: `${name} ${mismatch}` }],
          hint: typeHint(contentType),
        });
      const row = { id: uploadId, workspaceId: input.workspaceId, formId: input.form.id, blockId: block.id };
      const clientHash = input.client;
      await this.repo.insert(currentManager(this.db), {
        ...row,
        name,
        contentType,
        size,
        storedSize: size,
        clientHash,
      });
    } catch (err) {
      await this.storage.delete([key]); // no row would ever name the object
      throw err;
    }
    return { uploadId, size };
  }

  /**
   * An upload whose bytes come with it (create_upload's contentBase64, up to 5 MB): the checks of
   * create and of the PUT endpoint (block, name, type, markup, size, the type by its first bytes),
   * then stored as the page's streamed files are; the answer names it at once. Nothing is kept when
   * a check fails (400 at /contentBase64 or /size).
   */
  async createWithContent(
    input: Omit<CreateUploadInput, 'size'> & { size?: number },
    content: Buffer,
  ): Promise<{ uploadId: string; size: number }> {
    const { block } = this.checkFile(input);
    const limit = Math.min(fileLimitBytes(block, input.plan), CONTENT_LIMIT_BYTES);
    if (content.length > limit)
      throw invalid(
        '/contentBase64',
        `has ${content.length} bytes, over the limit of ${limit} bytes (${limit / MB} MB) here`,
        limit === CONTENT_LIMIT_BYTES
          ? 'Files over 5 MB go by URL: call create_upload without contentBase64 and PUT the bytes to its url.'
          : limitHint(block, input.plan),
      );
    if (input.size !== undefined && input.size !== content.length)
      throw invalid(
        '/size',
        `is ${input.size}, but contentBase64 has ${content.length} bytes`,
        'Leave size out when sending contentBase64, or send the whole file.',
      );
    return this.createFromStream(input, Readable.from([content]), '/contentBase64');
  }

  /**
   * The respondent page's bound on uploads no response holds yet (issue 45, 6.6): per client (its
   * keyed IP hash, every form) and per form, count and bytes (config anonymousLimits), counted in
   * the database so every instance sees the same. Past one: 429 pending_limit_reached, nothing
   * stored. (Two uploads at once may both pass the last place: the bound is a bound, not a quota.)
   */
  private async withinBounds(formId: string, client: Buffer, bytes: number): Promise<void> {
    const limits = this.config.anonymousLimits;
    const t = await this.repo.pendingTotals(currentManager(this.db), formId, client);
    const over =
      t.client.n + 1 > limits.uploadsPerIp || t.client.bytes + bytes > limits.uploadBytesPerIp
        ? 'from your network'
        : t.form.n + 1 > limits.uploadsPerForm || t.form.bytes + bytes > limits.uploadBytesPerForm
          ? 'for this form'
          : undefined;
    if (over)
      throw new ApiError('pending_limit_reached', {
        message: `Too many files are waiting to be sent with their answers ${over}: this file was not kept.`,
        hint: 'Submit the answers that hold your earlier files, or remove files you no longer need, or try again later (files not sent with answers go after 24 hours).',
      });
  }

  /** The block, the cleaned name and the declared type of a new upload, or a 400 saying what to fix. */
  private checkFile(input: Omit<CreateUploadInput, 'size'>): { block: Block; name: string; contentType: string } {
    const block = input.form.blocks.find((b) => b.id === input.block || (b.ref && b.ref === input.block));
    const fileBlocks = input.form.blocks.filter((b) => b.type === 'file_upload').map((b) => b.ref ?? b.id);
    if (!block || block.type !== 'file_upload')
      throw invalid(
        '/block',
        block ? `is a ${block.type} block, not a file_upload block` : 'names no block of this form',
        fileBlocks.length
          ? `Name a file_upload block of this form: ${fileBlocks.join(', ')}.`
          : 'This form has no file_upload block; add one with update_form.',
      );
    const name = cleanFilename(input.filename);
    if (!name)
      throw invalid(
        '/filename',
        'has nothing left once path, control and bidi characters are removed',
        'Send the file\'s own name, such as "cv.pdf".',
      );
    const contentType = normalizeContentType(input.contentType);
    if (!contentType)
      throw invalid(
        '/contentType',
        'must be a MIME type such as "application/pdf"',
        'Send the type of the file, e.g. "image/png".',
      );
    if (!accepts(block.accept, contentType, name))
      throw invalid(
        '/contentType',
        `${contentType} ("${name}") is not a type this block takes`,
        `This block takes ${block.accept!.join(', ')}.`,
      );
    const markup = markupRefusal(block.accept, contentType, name);
    if (markup) throw invalid('/filename', `"${name}" ${markup}`, MARKUP_HINT);
    return { block, name, contentType };
  }

  /**
   * Inside the submission's transaction: checks each named upload (its row, then the stored object:
   * exists, size as declared and within the limits, first bytes agreeing with the declared type)
   * and marks it held by responseId. Every problem is reported at `/answers/<key>`.
   */
  async attach(manager: EntityManager, input: AttachInput): Promise<void> {
    const ids = input.files.flatMap((f) => f.uploadIds);
    if (!ids.length) return;
    const named = input.files.flatMap((file) => file.uploadIds.map((id) => ({ id, file })));
    // The common case (bytes the service saw and checked) in one statement; the rest row by row.
    const { responseId, workspaceId, formId } = input;
    const pairs = named.map(({ id, file }) => ({ id, blockId: file.blockId }));
    const heldRows = await this.repo.holdChecked(manager, { responseId, workspaceId, formId, named: pairs });
    const held = new Set(heldRows.map((r) => r.id));
    // Held by their bytes; each must still fit its block as it is now (the transaction then rolls back).
    const rowsHeld = new Map(heldRows.map((r) => [r.id, r]));
    const unfit = named.map(({ id, file }) =>
      rowsHeld.has(id) ? blockProblem(blockOf(input.blocks, file.blockId), rowsHeld.get(id)!) : undefined,
    );
    const refusedHeld = refusalOf(named, unfit);
    if (refusedHeld) throw refusedHeld;
    if (held.size === ids.length && new Set(ids).size === ids.length) return;
    // What is left, and any id named a second time (refused: it is held by now).
    const seen = new Set<string>();
    const rest = named.filter(({ id }) => {
      const again = seen.has(id);
      seen.add(id);
      return again || !held.has(id);
    });
    const rows = new Map(
      (
        await this.repo.findForUpdate(
          manager,
          rest.map((n) => n.id),
        )
      ).map((r) => [r.id, r]),
    );
    const problems = await Promise.all(rest.map(({ id, file }) => this.problemOf(rows.get(id), file.blockId, input)));
    const refused = refusalOf(rest, problems);
    if (refused) throw refused;
    await this.repo.hold(
      manager,
      input.responseId,
      rest.map((n) => n.id),
    );
  }

  /**
   * check_response's read-only look at the uploads the answers name: what attach would refuse.
   * Bytes the service has not checked yet are looked at where they are, without sealing them (on
   * S3 a PUT may still replace them before a response seals them).
   */
  async refusal(manager: EntityManager, input: Omit<AttachInput, 'responseId'>): Promise<ApiError | undefined> {
    const named = input.files.flatMap((file) => file.uploadIds.map((id) => ({ id, file })));
    if (!named.length) return undefined;
    const rows = new Map((await this.repo.find(manager, [...new Set(named.map((n) => n.id))])).map((r) => [r.id, r]));
    const seen = new Set<string>();
    const problems = await Promise.all(
      named.map(({ id, file }) => {
        // Named twice: attach holds it at the first, and refuses the second as held.
        if (seen.has(id)) return { message: 'is already held by another response', hint: AGAIN };
        seen.add(id);
        return this.problemOf(rows.get(id), file.blockId, input, false);
      }),
    );
    return refusalOf(named, problems);
  }

  private async problemOf(
    row: UploadRow | undefined,
    blockId: string,
    input: Omit<AttachInput, 'responseId'>,
    seal = true,
  ): Promise<{ message: string; hint: string } | undefined> {
    // Another workspace's or form's upload is not found either: its existence is not told.
    if (!row || row.workspaceId !== input.workspaceId || row.formId !== input.formId)
      return {
        message:
          'no such upload exists in this form (never made, or deleted: with its response, or after 24 hours unused)',
        hint: AGAIN,
      };
    if (row.blockId !== blockId)
      return {
        message: `was made for another block (${row.blockId})`,
        hint: 'Name each upload in the answer of the block it was made for.',
      };
    if (row.responseId) return { message: 'is already held by another response', hint: AGAIN };
    const unfit = blockProblem(blockOf(input.blocks, blockId), row);
    if (unfit) return unfit;
    let found: Pick<UploadRow, 'storedSize' | 'typeProblem'> = row;
    if (row.storedSize === null) {
      const stored = await this.checkObject(row, seal);
      found = { storedSize: stored?.size ?? null, typeProblem: stored ? typeProblemOf(stored.start, row) : null };
    }
    if (found.storedSize === null)
      return {
        message: 'has no bytes stored yet',
        hint: 'PUT the file to the url create_upload gave (with its headers) before naming the upload.',
      };
    if (found.storedSize !== row.size)
      return { message: `the stored file has ${found.storedSize} bytes, but ${row.size} were declared`, hint: AGAIN };
    const mismatch = found.typeProblem;
    if (mismatch)
      return {
        message: mismatch,
        hint: 'Declare the type the file really has, in create_upload, with a name that fits it.',
      };
    return undefined;
  }

  /**
   * Bytes the service did not see (a presigned PUT to the bucket, or a row from before they were
   * recorded): sealed first, so that what is checked is what the response will hold, then read.
   * Without `seal` (check_response's dry run) they are only looked at, where they are.
   */
  private async checkObject(row: UploadRow, seal = true): Promise<StoredBytes | undefined> {
    const key = keyOf(row);
    try {
      if (!seal) return await this.storage.peek(key, SNIFF_BYTES);
      await this.storage.seal(key);
      const stored = await this.storage.head(key);
      if (!stored) return undefined;
      return { size: stored.size, start: await this.storage.readStart(key, SNIFF_BYTES) };
    } catch (e) {
      // The store failed mid-check (a seal's copy included): the submission rolls back, its upload
      // stays pending (a sealed copy is made again next time), and the caller may simply retry.
      this.logger.warn(`file store failed checking an upload: ${(e as Error).message}`);
      throw new ApiError('service_unavailable', {
        message: 'The file store did not answer while the files were checked; nothing was stored.',
        hint: 'Retry after 5 seconds (Retry-After), with the same answers and upload ids.',
        headers: { 'Retry-After': '5' },
      });
    }
  }

  /** Deletes these uploads if still pending, rows and objects (files of a form post that was refused as a whole). */
  async discard(uploadIds: string[]): Promise<void> {
    if (!uploadIds.length) return;
    const gone = await this.repo.deletePendingIds(currentManager(this.db), uploadIds);
    await this.storage.delete(gone.map(keyOf));
  }

  /** name, size, contentType of uploads (for reads); ids not found are left out. */
  async describe(manager: EntityManager, uploadIds: string[]): Promise<Map<string, UploadDescription>> {
    if (!uploadIds.length) return new Map();
    const rows = await this.repo.find(manager, uploadIds);
    return new Map(rows.map((r) => [r.id, { uploadId: r.id, name: r.name, size: r.size, contentType: r.contentType }]));
  }

  /** Where a held upload's bytes are, with its workspace, cleaned name and type (downloads); undefined when none is held. */
  async heldObject(
    manager: EntityManager,
    uploadId: string,
  ): Promise<{ key: string; workspaceId: string; name: string; contentType: string; size: number } | undefined> {
    const [row] = await this.repo.find(manager, [uploadId]);
    if (!row?.responseId) return undefined;
    const { workspaceId, name, contentType, size } = row;
    return { key: keyOf(row), workspaceId, name, contentType, size };
  }

  /** A workspace's total storage: the sizes of the files its responses hold (the Plan page). */
  storedBytes(manager: EntityManager, workspaceId: string): Promise<number> {
    return this.repo.heldBytes(manager, workspaceId);
  }

  /** Deletes the uploads held by these responses: the rows now, the objects once the transaction commits. */
  async deleteForResponses(manager: EntityManager, responseIds: string[]): Promise<void> {
    if (!responseIds.length) return;
    await this.deleteObjectsAfterCommit(manager, await this.repo.deleteForResponses(manager, responseIds));
  }

  /** Deletes the uploads of this form (held or pending): the rows now, the objects once the transaction commits. */
  async deleteForForm(manager: EntityManager, formId: string): Promise<void> {
    await this.deleteObjectsAfterCommit(manager, await this.repo.deleteForForm(manager, formId));
  }

  /**
   * Deletes uploads no response named within 24 hours (rows and objects), in bounded batches. Each
   * batch is its own statement, skipping rows another instance's sweep holds; its objects go after.
   */
  sweep(now = new Date()): Promise<number> {
    const before = new Date(now.getTime() - PENDING_HOURS * 3600_000);
    return inBatches(async () => {
      const gone = await this.repo.deletePending(currentManager(this.db), before, SWEEP_BATCH);
      await this.storage.delete(gone.map(keyOf));
      return gone.length;
    }, SWEEP_BATCH);
  }

  /**
   * Deletes objects written before 24 hours ago that no uploads row names: the bytes of a row
   * whose transaction failed, a crash mid-write. S3's `.upload` objects go whatever their age once
   * no upload waits for them (an upload URL cannot be revoked: a PUT after its upload was deleted,
   * held or checked lands there until the URL expires). Lists the whole store; only keys of the
   * service's own shape are touched.
   */
  async sweepOrphans(now = new Date()): Promise<number> {
    const before = new Date(now.getTime() - PENDING_HOURS * 3600_000);
    let deleted = 0;
    let batch: Array<{ key: string; id: string }> = [];
    const flush = async () => {
      const rows = await this.repo.keysOf(currentManager(this.db), [...new Set(batch.map((b) => b.id))]);
      // A pending upload's bytes may still wait under `.upload` (S3) until received; a held one's were sealed.
      const named = new Set(rows.flatMap((r) => (r.awaiting ? [keyOf(r), `${keyOf(r)}.upload`] : [keyOf(r)])));
      const orphans = batch.filter((b) => !named.has(b.key)).map((b) => b.key);
      await this.storage.delete(orphans);
      deleted += orphans.length;
      batch = [];
    };
    for await (const key of this.storage.stale(before, now)) {
      const id = OUR_KEY.exec(key)?.[1];
      if (!id) continue;
      batch.push({ key, id });
      if (batch.length >= SWEEP_BATCH) await flush();
    }
    if (batch.length) await flush();
    return deleted;
  }

  /**
   * An object deleted for a transaction that then rolls back would lose a file that a row still
   * names, so objects go after the commit. A failure then leaves an object no row names (logged).
   */
  private async deleteObjectsAfterCommit(manager: EntityManager, rows: UploadKeyParts[]): Promise<void> {
    if (!rows.length) return;
    const runner = manager.queryRunner;
    if (!runner?.isTransactionActive) return this.storage.delete(rows.map(keyOf));
    const keys = this.afterCommit.get(runner) ?? [];
    keys.push(...rows.map(keyOf));
    this.afterCommit.set(runner, keys);
  }

  async afterTransactionCommit(event: { queryRunner: QueryRunner }): Promise<void> {
    const runner = event.queryRunner;
    if (runner.isTransactionActive) return; // a savepoint: the transaction goes on
    const keys = this.afterCommit.get(runner);
    if (!keys) return;
    this.afterCommit.delete(runner);
    await this.storage
      .delete(keys)
      .catch((err: Error) =>
        this.logger.warn(`${keys.length} deleted uploads' objects left in storage: ${err.message}`),
      );
  }

  afterTransactionRollback(event: { queryRunner: QueryRunner }): void {
    this.afterCommit.delete(event.queryRunner);
  }
}

const keyOf = (r: UploadKeyParts) => objectKey(r.workspaceId, r.formId, r.id);

const AGAIN = 'Make a new upload with create_upload, PUT the bytes to its url, and name its uploadId.';
const MARKUP_HINT =
  "Markup (HTML, SVG, XML) is taken only when the block's accept lists its type or extension and the file is declared and named as such; send another format (PDF, an image).";

const blockOf = (blocks: Block[], id: string) => blocks.find((b) => b.id === id);

/**
 * Whether an upload still fits its block as the block is now (issue 45, item 6.4): its declared
 * type and name in the block's accept (markup only where listed) and its size within maxSizeMb.
 * The plan's limit was the one at creation. A block gone is the answer check's to refuse.
 */
export function blockProblem(
  block: Block | undefined,
  row: Pick<UploadRow, 'name' | 'contentType' | 'size'>,
): { message: string; hint: string } | undefined {
  if (!block) return undefined;
  if (!accepts(block.accept, row.contentType, row.name))
    return {
      message: `${row.name} (${row.contentType}) is not a type this block takes now: it takes ${block.accept!.join(', ')}`,
      hint: 'Make a new upload of a type the block takes (get_form shows its accept list).',
    };
  const markup = markupRefusal(block.accept, row.contentType, row.name);
  if (markup) return { message: `${row.name} ${markup}`, hint: MARKUP_HINT };
  const limit = fileLimitBytes(block, 'pro');
  if (row.size > limit)
    return {
      message: `${row.name} has ${row.size} bytes, over this block's limit of ${limit / MB} MB now (maxSizeMb)`,
      hint: 'Make a new upload of a file within the limit.',
    };
  return undefined;
}

/** The type check's finding on these first bytes, as a sentence naming the file; null when they agree. */
function typeProblemOf(start: Buffer, row: Pick<UploadRow, 'name' | 'contentType'>): string | null {
  const mismatch = typeMismatch(start, row.contentType, row.name);
  return mismatch ? `${row.name} ${mismatch}` : null;
}

function typeHint(contentType: string): string {
  return `Send ${typeWords(contentType)} itself: renaming a file does not change what it contains.`;
}

/**
 * The refusal of an upload whose bytes were received and found wrong (`422 file_refused`, in plain
 * words naming the file; the upload id in details only); undefined when they were taken.
 */
function refusalOfReceived(row: UploadRow): ApiError | undefined {
  if (row.storedSize === null) return undefined;
  const problem =
    row.storedSize !== row.size
      ? `${row.name} has ${row.storedSize} bytes, not the ${row.size} bytes declared: ${row.storedSize < row.size ? 'it did not arrive whole' : 'another file was sent'}`
      : row.typeProblem;
  if (!problem) return undefined;
  return new ApiError('file_refused', {
    message: `${problem}.`,
    hint: row.storedSize !== row.size ? 'Send the file again, whole.' : typeHint(row.contentType),
    details: [{ path: '/uploadId', message: `${row.id}: refused; make a new upload for another file` }],
  });
}

function uploadGone(): ApiError {
  return new ApiError('not_found', {
    message: 'This upload no longer exists: it was deleted (with its response or form, or after 24 hours unused).',
    hint: 'Ask for a new upload URL (create_upload) and send the file there.',
  });
}

function alreadySent(): ApiError {
  return new ApiError('forbidden', {
    message: 'This upload already has its bytes: an upload URL takes one file, once.',
    hint: 'To send another file, ask for a new upload URL (create_upload).',
  });
}

/** The refusal of these named uploads, a detail at `/answers/<key>` per problem; undefined when none has one. */
function refusalOf(
  named: Array<{ id: string; file: { key: string } }>,
  problems: Array<{ message: string; hint: string } | undefined>,
): ApiError | undefined {
  const details: ErrorDetail[] = [];
  let hint: string | undefined;
  problems.forEach((problem, i) => {
    if (!problem) return;
    const { id, file } = named[i];
    details.push({ path: `/answers/${pointerSegment(file.key)}`, message: `${id}: ${problem.message}` });
    hint ??= problem.hint;
  });
  if (!details.length) return undefined;
  return new ApiError('invalid_arguments', {
    message: 'A file named in the answers cannot be taken; nothing was stored.',
    details,
    hint,
  });
}

function invalid(path: string, message: string, hint: string): ApiError {
  return new ApiError('invalid_arguments', {
    message: `${path.slice(1)} ${message}.`,
    details: [{ path, message }],
    hint,
  });
}

function limitHint(block: Block, plan: Plan): string {
  return (
    `This block takes files up to ${block.maxSizeMb ?? FILE_SIZE_LIMIT_MB.free} MB (maxSizeMb); the ${plan === 'pro' ? 'Pro' : 'Free'} plan ` +
    `takes up to ${FILE_SIZE_LIMIT_MB[plan]} MB per file (Free ${FILE_SIZE_LIMIT_MB.free}, Pro ${FILE_SIZE_LIMIT_MB.pro}).`
  );
}
