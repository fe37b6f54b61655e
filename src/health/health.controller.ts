import { Controller, Get, HttpCode, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Response } from 'express';
import { DataSource } from 'typeorm';
import { Public } from '../auth/public.decorator';

/** Liveness and readiness for the load balancer. */
@Public()
@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  @Get('healthz')
  @HttpCode(200)
  live() {
    return { status: 'ok' };
  }

  /** 503 only when the database does not answer: that is the one thing no request can do without. */
  @Get('readyz')
  async ready(@Res({ passthrough: true }) res: Response) {
    try {
      await withTimeout(this.db.query('SELECT 1'), 2000);
      return { status: 'ok', checks: { database: 'ok', rateLimitStore: 'in-process' } };
    } catch {
      res.status(503);
      return { status: 'unavailable', checks: { database: 'unreachable' } };
    }
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
