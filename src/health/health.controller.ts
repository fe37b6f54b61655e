/** /healthz and /readyz for the load balancer. */
import { Controller, Get, HttpCode, Optional, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import type { FastifyReply } from 'fastify';
import { DataSource } from 'typeorm';
import { Public } from '../auth/public.decorator';
import { RateLimitService } from '../rate-limit/rate-limit.service';
import { ReadReplica } from '../database/replica';
import { currentManager } from '../database/transaction';
import { FileStorage } from '../storage/file-storage';
import { EmailReadiness, EmailService } from '../email/email.service';

type Check = 'ok' | 'unreachable';

/** Liveness and readiness for the load balancer (exempt from rate limits, no credential). */
@Public()
@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly rateLimit: RateLimitService,
    private readonly files: FileStorage,
    private readonly email: EmailService,
    @Optional() private readonly replica?: ReadReplica,
  ) {}

  /** The process is up and serving HTTP. */
  @Get('healthz')
  @HttpCode(200)
  live() {
    return { status: 'ok' };
  }

  /**
   * Whether to send traffic here. 503 without the database, or without the file storage (disk or
   * bucket): no request, or no upload or download, can be served without it. Redis down is `degraded` with 200: the service fails open and counts rate limits per
   * instance until Redis is back. (A stopping instance closes its listener: probes then fail to
   * connect, which is the signal a load balancer needs.) A read replica (DATABASE_REPLICA_URL) down or
   * behind never fails it: long reads then go to the primary; `replica: { ok, lagMs? }` says so.
   * Email never fails it either (messages wait in the outbox): `email: { configured, server?, pending }`.
   */
  @Get('readyz')
  async ready(@Res({ passthrough: true }) res: FastifyReply) {
    const [database, store, filesOk, replica, email] = await Promise.all([
      withTimeout(currentManager(this.db).query('SELECT 1'), 2000).then(
        (): Check => 'ok',
        (): Check => 'unreachable',
      ),
      this.rateLimit.storeHealth(),
      withTimeout(this.files.ready(), 2000).then(
        () => true,
        () => false,
      ),
      this.replica?.status(),
      withTimeout(this.email.readiness(), 4000).catch((): EmailReadiness | undefined => undefined),
    ]);
    const checks = { database, redis: store.redis };
    const rateLimits = store.counting;
    const storage = { kind: this.files.kind, ok: filesOk };
    const reads = { ...(replica ? { replica } : {}), ...(email ? { email } : {}) };
    if (database !== 'ok' || !filesOk) {
      res.status(503);
      return { status: 'unavailable', checks, storage, rateLimits, ...reads };
    }
    if (store.redis === 'unreachable') {
      return {
        status: 'degraded',
        checks,
        storage,
        rateLimits,
        ...reads,
        note: `Redis has been unreachable since ${store.unreachableSince}: each instance counts rate limits on its own until it is back.`,
      };
    }
    return { status: 'ok', checks, storage, rateLimits, ...reads };
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}
