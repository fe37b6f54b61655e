/** The signed link of an export: what it grants, and the signing and checking of it. */
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Principal } from '../common/access/principal';
import { sharedSecret } from '../oauth/shared-secret';
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
}

/**
 * Signs and checks export links. A link is `<payload>.<mac>`: the grant as base64url JSON, and an
 * HMAC-SHA256 of it under a key every instance shares (kept in oauth_secrets, like the respondent
 * page's state key), so any instance serves a link another made, and nothing is stored per export.
 * The grant is readable by whoever holds the link (it names ids and the filter, no secret); the MAC
 * makes it unforgeable, and a link altered in one character is no link at all.
 */
@Injectable()
export class ExportLinkSigner {
  private key?: Buffer;
  /** The clock links are made and checked by (tests move it instead of waiting 15 minutes). */
  now: () => number = Date.now;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async sign(grant: ExportGrant): Promise<string> {
    const body = Buffer.from(JSON.stringify(grant)).toString('base64url');
    return `${body}.${this.mac(await this.secret(), body)}`;
  }

  /** The grant of a link this service signed and that has not expired; undefined for anything else. */
  async verify(link: unknown): Promise<ExportGrant | undefined> {
    if (typeof link !== 'string' || link.length > 16_384) return undefined;
    const [body, mac, extra] = link.split('.');
    if (!body || !mac || extra !== undefined) return undefined;
    const expected = Buffer.from(this.mac(await this.secret(), body));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    let grant: ExportGrant;
    try {
      grant = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as ExportGrant;
    } catch {
      return undefined;
    }
    return typeof grant?.exp === 'number' && grant.exp > this.now() ? grant : undefined;
  }

  private mac(key: Buffer, body: string): string {
    // A prefix of its own, so that no other signature under a shared key could pass for a link.
    return createHmac('sha256', key).update(`export-link.${body}`).digest('base64url');
  }

  private async secret(): Promise<Buffer> {
    this.key ??= Buffer.from(
      await sharedSecret(this.db, 'export-link-key', () => randomBytes(32).toString('base64url')),
      'base64url',
    );
    return this.key;
  }
}
