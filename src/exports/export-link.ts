/** The link of an export: what it grants, and the making and reading of it. */
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash, randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Principal } from '../common/access/principal';
import { currentManager } from '../database/transaction';
import type { ResponseFilter } from '../responses/response-filter';
import type { AnswersBy } from '../responses/responses.service';

/** How long a link serves. */
export const EXPORT_LINK_TTL_MS = 15 * 60 * 1000;

export type ExportFormat = 'csv' | 'ndjson';

/**
 * What a link grants: one download of one form's responses, in one format and under one filter,
 * acting for the credential that made it (re-checked at download: see ExportAccess), until `exp`.
 */
export interface ExportGrant {
  /** The workspace the link is bound to: its form is looked up in this workspace only. */
  w: string;
  /** The credential that made it (Principal.credential kind and id) and its budget's key. */
  c: { k: Principal['credential']['kind']; i: string; b: string; x?: number };
  /** The form's internal id and publicId. */
  f: string;
  p: string;
  fmt: ExportFormat;
  a: AnswersBy;
  /** The filter as checked (blocks and choices by id). */
  q: ResponseFilter;
  /** When the link stops serving (ms since the epoch). */
  exp: number;
  /** Partial responses too ('all': after the completed ones) or only ('partial'); absent: completed only (issue 36). */
  s?: 'partial' | 'all';
  /** An export a job wrote (issue 49): the storage key of its file, served as stored. */
  k?: string;
}

/** How many expired grants making one link sweeps, at most: the table stays at about the links of the last 15 minutes. */
const SWEEP_ROWS = 100;

/**
 * Makes and reads export links. A link is a random token (32 bytes, base64url: 43 characters
 * whatever the filter); its grant is stored in export_links under the token's SHA-256, so any
 * instance serves a link another made, and the table holds no link (a database dump gives none).
 * A link altered in one character is no link at all. Each new link sweeps expired grants.
 */
@Injectable()
export class ExportLinkStore {
  /** The clock links are made and checked by (tests move it instead of waiting 15 minutes). */
  now: () => number = Date.now;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async create(grant: ExportGrant): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const manager = currentManager(this.db);
    await manager.query(
      `DELETE FROM export_links WHERE id IN (SELECT id FROM export_links WHERE expires_at < now() LIMIT ${SWEEP_ROWS})`,
    );
    await manager.query(
      `INSERT INTO export_links (id, payload, expires_at) VALUES ($1, $2::jsonb, to_timestamp($3::float8 / 1000))`,
      [keyOf(token), JSON.stringify(grant), grant.exp],
    );
    return token;
  }

  /** The grant of a link this service made and that has not expired; undefined for anything else. */
  async find(link: unknown): Promise<ExportGrant | undefined> {
    if (typeof link !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(link)) return undefined;
    const [row] = await currentManager(this.db).query(`SELECT payload FROM export_links WHERE id = $1`, [keyOf(link)]);
    const grant = row?.payload as ExportGrant | undefined;
    return typeof grant?.exp === 'number' && grant.exp > this.now() ? grant : undefined;
  }
}

/** Where a link's grant is stored: the SHA-256 of its token (a lookup by key, so no timing to compare). */
function keyOf(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}
