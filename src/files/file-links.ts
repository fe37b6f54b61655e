/**
 * Download links of uploaded files (issue 35): `{PUBLIC_URL}/api/v1/files/<uploadId>?g=...&sig=...`,
 * stateless (no row per read), signed with a key every instance shares, bound to the credential
 * that read the answer and re-checked on use like an export link (see FilesController).
 */
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Principal } from '../common/access/principal';
import { APP_CONFIG, AppConfig } from '../config/config';
import { sharedSecret } from '../oauth/shared-secret';

/** How long a download link serves. */
export const FILE_LINK_TTL_MS = 15 * 60 * 1000;
export const FILES_PATH = '/api/v1/files';

/** The credential a link acts for, as an export link names it (kind, id, budget key, an OAuth token's expiry in s). */
export interface LinkCredential {
  k: Principal['credential']['kind'];
  i: string;
  b: string;
  x?: number;
}

/** Who may use a link: the workspace and the credential, until `exp` (ms). */
export interface FileGrant {
  w: string;
  c: LinkCredential;
  exp: number;
}

/** Who reads file answers: links are bound to its workspace and credential, and end no later than `until` (ms). */
export type FileReader = Omit<FileGrant, 'exp'> & { until?: number };

/** The reader a principal is: an OAuth access token is recognised by its grant and its expiry (see credentialActs). */
export function readerOf(principal: Principal): FileReader {
  const { kind, id } = principal.credential;
  const expiry = principal.expiresAt?.getTime();
  return {
    w: principal.workspace.id,
    c: {
      k: kind,
      i: id,
      b: principal.credentialKey,
      ...(kind === 'oauth' && expiry ? { x: Math.floor(expiry / 1000) } : {}),
    },
    until: expiry,
  };
}

@Injectable()
export class FileLinks {
  /** The clock links are made and checked by (tests move it instead of waiting 15 minutes). */
  now: () => number = Date.now;
  private key: Buffer | undefined;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Makes the links of one read: each file's link carries the same grant, never longer-lived than the credential. */
  async signer(reader: FileReader): Promise<(uploadId: string) => string> {
    const grant: FileGrant = {
      w: reader.w,
      c: reader.c,
      exp: Math.min(this.now() + FILE_LINK_TTL_MS, reader.until ?? Infinity),
    };
    const g = Buffer.from(JSON.stringify(grant)).toString('base64url');
    const secret = await this.secret();
    return (uploadId) => `${this.config.publicUrl}${FILES_PATH}/${uploadId}?g=${g}&sig=${mac(secret, uploadId, g)}`;
  }

  /** The grant of a link made for this upload that has not expired; undefined for anything else (altered, expired, another upload's). */
  async verify(uploadId: string, query: Record<string, unknown>): Promise<FileGrant | undefined> {
    const { g, sig } = query;
    if (typeof g !== 'string' || typeof sig !== 'string') return undefined;
    const expected = Buffer.from(mac(await this.secret(), uploadId, g));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    const grant = JSON.parse(Buffer.from(g, 'base64url').toString()) as FileGrant;
    return grant.exp > this.now() ? grant : undefined;
  }

  private async secret(): Promise<Buffer> {
    this.key ??= Buffer.from(
      await sharedSecret(this.db, 'file-link-key', () => randomBytes(32).toString('base64url')),
      'base64url',
    );
    return this.key;
  }
}

function mac(secret: Buffer, uploadId: string, grant: string): string {
  return createHmac('sha256', secret).update(`file\n${uploadId}\n${grant}`).digest('base64url');
}
