import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHmac, randomBytes } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/config';
import { sharedSecret } from '../oauth/shared-secret';

/**
 * The respondent page's client as stored on the rows it makes without a credential (pending
 * uploads, partial responses; issue 45, 6.6): HMAC-SHA256 of its IP under a server key, never the
 * IP itself. The IP is Fastify's request.ip, as the per-IP budget takes it (TRUST_PROXY decides
 * which X-Forwarded-For entry counts). The key is CLIENT_IP_KEY, or one made once and kept in the
 * database (oauth_secrets), so that every instance counts the same client the same.
 */
@Injectable()
export class ClientKeys {
  private key?: Promise<Buffer>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  async of(ip: string | undefined): Promise<Buffer> {
    const key = await this.secret();
    return createHmac('sha256', key).update(clientOf(ip)).digest();
  }

  private secret(): Promise<Buffer> {
    if (this.config.clientIpKey) return Promise.resolve(this.config.clientIpKey);
    this.key ??= sharedSecret(this.db, 'client-ip-key', () => randomBytes(32).toString('base64url')).then(
      (k) => Buffer.from(k, 'base64url'),
      (err: Error) => {
        this.key = undefined; // tried again on the next request
        throw err;
      },
    );
    return this.key;
  }
}

/**
 * The client a request's IP stands for: an IPv4 address (an IPv4-mapped IPv6 one folded to it),
 * or an IPv6 address's /64, the block one subscriber holds (a client rotating through its /64 is
 * one client, not 2^64).
 */
export function clientOf(ip: string | undefined): string {
  if (!ip || !ipaddr.isValid(ip)) return ip ?? 'unknown';
  const parsed = ipaddr.process(ip);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4).concat([0, 0, 0, 0]);
  return `${new ipaddr.IPv6(parts).toString()}/64`;
}
