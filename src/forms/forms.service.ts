import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { ApiError } from '../common/errors/api-error';
import { newFormPublicId } from '../common/ids';
import { Block, BlockInput, blockView, normalizeBlocks } from './blocks';
import { FormStatus } from './entities/form.entity';

/** A form as read from the database, with its blocks in order. */
export interface FormRecord {
  id: string;
  publicId: string;
  workspaceId: string;
  title: string;
  description: string | null;
  status: FormStatus;
  version: number;
  createdAt: Date;
  updatedAt: Date;
  publishedAt: Date | null;
  closedAt: Date | null;
  blocks: Block[];
}

interface FormRow {
  id: string;
  public_id: string;
  workspace_id: string;
  title: string;
  description: string | null;
  status: FormStatus;
  version: number;
  created_at: Date;
  updated_at: Date;
  published_at: Date | null;
  closed_at: Date | null;
  blocks?: Array<{ id: string; type: Block['type']; title: string; description: string | null; required: boolean; settings: Record<string, unknown> }>;
}

const FORM_COLUMNS = `f.id, f.public_id, f.workspace_id, f.title, f.description, f.status, f.version,
  f.created_at, f.updated_at, f.published_at, f.closed_at`;

/** Blocks in order, as one JSON value, so a form and its blocks cost one round trip. */
const BLOCKS_JSON = `COALESCE((SELECT json_agg(json_build_object('id', b.id, 'type', b.type, 'title', b.title,
    'description', b.description, 'required', b.required, 'settings', b.settings) ORDER BY b.position)
  FROM blocks b WHERE b.form_id = f.id), '[]'::json) AS blocks`;

export function notFoundForm(publicId: string): ApiError {
  return new ApiError('not_found', {
    message: `No form with the publicId "${publicId}" in this workspace.`,
    hint: 'list_forms shows the forms of the workspace this credential acts on.',
  });
}

@Injectable()
export class FormsService {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A form of the workspace, or 404 (another workspace's form is not found either). */
  async get(workspaceId: string, publicId: string, manager: EntityManager = this.db.manager): Promise<FormRecord> {
    const rows: FormRow[] = await manager.query(`SELECT ${FORM_COLUMNS}, ${BLOCKS_JSON} FROM forms f WHERE f.workspace_id = $1 AND f.public_id = $2`, [
      workspaceId,
      publicId,
    ]);
    if (!rows[0]) throw notFoundForm(publicId);
    return toRecord(rows[0]);
  }

  async list(workspaceId: string, opts: { limit: number; offset: number; status?: FormStatus }): Promise<{ total: number; forms: FormRecord[] }> {
    const params: unknown[] = [workspaceId];
    let where = 'f.workspace_id = $1';
    if (opts.status) {
      params.push(opts.status);
      where += ` AND f.status = $${params.length}`;
    }
    const [{ total }] = await this.db.query(`SELECT count(*)::int AS total FROM forms f WHERE ${where}`, params);
    const rows: FormRow[] = await this.db.query(
      `SELECT ${FORM_COLUMNS} FROM forms f WHERE ${where} ORDER BY f.created_at, f.id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, opts.limit, opts.offset],
    );
    return { total, forms: rows.map(toRecord) };
  }

  /** Creates a form with its blocks (validated; details name each bad block and field). */
  async create(workspaceId: string, input: { title: string; description?: string | null; blocks?: BlockInput[] }, manager?: EntityManager): Promise<FormRecord> {
    const { blocks, details } = normalizeBlocks(input.blocks ?? []);
    if (details.length) throw new ApiError('invalid_arguments', { message: 'Some blocks are not valid.', details });
    const run = async (tx: EntityManager) => {
      const [{ id }] = await tx.query(
        // clock_timestamp(), not now(): forms made in one transaction still list in creation order.
        `INSERT INTO forms (public_id, workspace_id, title, description, created_at, updated_at)
         VALUES ($1, $2, $3, $4, clock_timestamp(), clock_timestamp()) RETURNING id`,
        [newFormPublicId(), workspaceId, input.title, input.description ?? null],
      );
      await this.insertBlocks(tx, id, blocks);
      const [row] = await tx.query(`SELECT public_id FROM forms WHERE id = $1`, [id]);
      return this.get(workspaceId, row.public_id, tx);
    };
    return manager ? run(manager) : this.db.transaction(run);
  }

  /** Sets a form's status (the demo and, later, publish/close tools). */
  async setStatus(formId: string, status: FormStatus, manager: EntityManager = this.db.manager): Promise<void> {
    await manager.query(
      `UPDATE forms SET status = $2, version = version + 1, updated_at = now(),
         published_at = CASE WHEN $2 = 'published' THEN now() ELSE published_at END,
         closed_at = CASE WHEN $2 = 'closed' THEN now() ELSE NULL END
       WHERE id = $1`,
      [formId, status],
    );
  }

  private async insertBlocks(tx: EntityManager, formId: string, blocks: Block[]): Promise<void> {
    if (blocks.length === 0) return;
    const values: unknown[] = [];
    const tuples = blocks.map((b, i) => {
      const { id, type, title, description, required, ...settings } = b;
      values.push(formId, id, i, type, title, description ?? null, required, JSON.stringify(settings));
      const o = i * 8;
      return `($${o + 1}, $${o + 2}, $${o + 3}, $${o + 4}, $${o + 5}, $${o + 6}, $${o + 7}, $${o + 8}::jsonb)`;
    });
    await tx.query(`INSERT INTO blocks (form_id, id, position, type, title, description, required, settings) VALUES ${tuples.join(', ')}`, values);
  }
}

function toRecord(row: FormRow): FormRecord {
  return {
    id: row.id,
    publicId: row.public_id,
    workspaceId: row.workspace_id,
    title: row.title,
    description: row.description,
    status: row.status,
    version: row.version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    publishedAt: row.published_at,
    closedAt: row.closed_at,
    blocks: (row.blocks ?? []).map((b) => ({ id: b.id, type: b.type, title: b.title, description: b.description, required: b.required, ...b.settings })),
  };
}

/** A form in the API's shape (blocks included when asked). */
export function formView(f: FormRecord, withBlocks: true): Record<string, unknown> & { blocks: unknown[] };
export function formView(f: FormRecord, withBlocks?: false): Record<string, unknown>;
export function formView(f: FormRecord, withBlocks = false) {
  const view: Record<string, unknown> = {
    publicId: f.publicId,
    title: f.title,
    description: f.description,
    status: f.status,
    version: f.version,
    createdAt: f.createdAt.toISOString(),
    updatedAt: f.updatedAt.toISOString(),
    publishedAt: f.publishedAt?.toISOString() ?? null,
    closedAt: f.closedAt?.toISOString() ?? null,
  };
  if (withBlocks) view.blocks = f.blocks.map(blockView);
  return view;
}
