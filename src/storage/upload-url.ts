/** The disk adapter's upload URLs: signed with a key every instance shares, so any instance takes the bytes. */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { sharedSecret } from '../oauth/shared-secret';

/** What an upload URL allows: the bytes of one key, of at most `size` bytes and of one type, until `expiresAt`. */
export interface UploadGrant {
  key: string;
  size: number;
  contentType: string;
  expiresAt: Date;
}

export class UploadUrlSigner {
  private key: Buffer | undefined;

  constructor(private readonly db: DataSource) {}

  /** The query string of the upload URL: exp, size, type and sig. */
  async query(grant: UploadGrant): Promise<string> {
    const exp = String(grant.expiresAt.getTime());
    const size = String(grant.size);
    const sig = this.mac(await this.secret(), grant.key, exp, size, grant.contentType);
    return new URLSearchParams({ exp, size, type: grant.contentType, sig }).toString();
  }

  /** The grant a URL carries, or undefined when it was altered or not made with the shared key (expiry is the caller's check). */
  async verify(key: string, query: Record<string, unknown>): Promise<UploadGrant | undefined> {
    const { exp, size, type, sig } = query;
    if (typeof exp !== 'string' || typeof size !== 'string' || typeof type !== 'string' || typeof sig !== 'string')
      return undefined;
    const expected = Buffer.from(this.mac(await this.secret(), key, exp, size, type));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    return { key, size: Number(size), contentType: type, expiresAt: new Date(Number(exp)) };
  }

  private mac(secret: Buffer, key: string, exp: string, size: string, type: string): string {
    return createHmac('sha256', secret).update(`upload\n${key}\n${exp}\n${size}\n${type}`).digest('base64url');
  }

  private async secret(): Promise<Buffer> {
    this.key ??= Buffer.from(
      await sharedSecret(this.db, 'upload-url-key', () => randomBytes(32).toString('base64url')),
      'base64url',
    );
    return this.key;
  }
}
