import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { Public } from '../auth/public.decorator';
import { RateLimitService } from '../rate-limit/rate-limit.service';
import { ExportsService } from './exports.service';

/**
 * GET /api/v1/exports/download?token=...: serves an export link made by export_responses, on any
 * instance, with no other credential (the link is one). The link travels in the query string,
 * which the access log and the error log leave out (they log the path only).
 *
 * Budgets: the request spends the client IP's (the early hook, as on every public route) and, once
 * the link is read, one request of the budget of the credential that made it (so links cannot be
 * used to go around that credential's rate limit); the headers show the tighter of the two. A
 * download is one request however long it streams.
 */
@Public()
@ApiExcludeController()
@Controller('api/v1/exports')
export class ExportsController {
  constructor(
    private readonly exports: ExportsService,
    private readonly rateLimit: RateLimitService,
  ) {}

  @Get('download')
  async download(@Query('token') token: unknown, @Req() req: FastifyRequest, @Res() res: FastifyReply) {
    const grant = await this.exports.grantOf(token);
    await this.rateLimit.spendForLink(req.ipBudget, grant.c.b, res.raw);
    // HEAD: the checks and the headers, and no read (Fastify would read a body to its end to drop
    // it). An empty stream, not no body, so that no "Content-Length: 0" claims the GET is empty.
    // The response itself: the download reuses the parts it has written (see PartPool).
    const download = await this.exports.open(grant, req.method === 'HEAD', res.raw);
    return res
      .status(200)
      .headers(download.headers)
      .send(download.body ?? Readable.from([]));
  }
}
