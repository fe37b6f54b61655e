import { Controller, Get, Param, Query, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { DataSource } from 'typeorm';
import { Public } from '../auth/public.decorator';
import { ApiError } from '../common/errors/api-error';
import { currentManager } from '../database/transaction';
import { ExportsRepository } from '../exports/exports.repository';
import { RateLimitService } from '../rate-limit/rate-limit.service';
import { attachmentDisposition } from '../storage/content-disposition';
import { FileStorage } from '../storage/file-storage';
import { UploadsService } from '../uploads/uploads.service';
import { FileLinks } from './file-links';

/** How long the presigned GET an S3 download redirects to serves (it is followed at once). */
const REDIRECT_SECONDS = 60;

/**
 * GET /api/v1/files/<uploadId>?g=...&sig=...: the download link of a file answer (FileLinks),
 * with no other credential. The credential it was made for is re-checked on every use, as for an
 * export link (a revoked token's links stop working), and spends a request of its budget; the IP
 * budget is spent by the early hook, as on every public route.
 *
 * Nothing is served inline from the service's origin: always `attachment`, the stored type with
 * `nosniff`, and `Content-Security-Policy: sandbox`, so an uploaded HTML or SVG never runs as a page
 * of Formwork. With object storage the answer is a 302 to a presigned GET that sets the same
 * disposition and type.
 */
@Public()
@ApiExcludeController()
@Controller('api/v1/files')
export class FilesController {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly links: FileLinks,
    private readonly access: ExportsRepository,
    private readonly uploads: UploadsService,
    private readonly storage: FileStorage,
    private readonly rateLimit: RateLimitService,
  ) {}

  @Get(':uploadId')
  async download(
    @Param('uploadId') uploadId: string,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res() res: FastifyReply,
  ) {
    const grant = await this.links.verify(uploadId, query);
    if (!grant) throw fileLinkNotFound();
    await this.rateLimit.spendForLink(req.ipBudget, grant.c.b, res.raw);
    const manager = currentManager(this.db);
    if (!(await this.access.credentialActs(manager, grant))) throw fileLinkNotFound();
    // Another workspace's upload, or one whose response was deleted, is not found either.
    const file = await this.uploads.heldObject(manager, uploadId);
    if (!file || file.workspaceId !== grant.w) throw fileLinkNotFound();
    res.header('Cache-Control', 'private, no-store');
    const o = { filename: file.name, contentType: file.contentType, expiresInSeconds: REDIRECT_SECONDS };
    const redirect = await this.storage.downloadRedirect(file.key, o);
    if (redirect) return res.status(302).header('Location', redirect).send();
    // HEAD: the headers and no read (see ExportsController).
    const body = req.method === 'HEAD' ? Readable.from([]) : await this.storage.read(file.key);
    return res
      .status(200)
      .headers({
        'Content-Type': file.contentType,
        'Content-Length': String(file.size),
        'Content-Disposition': attachmentDisposition(file.name),
        'X-Content-Type-Options': 'nosniff',
        'Content-Security-Policy': 'sandbox',
      })
      .send(body);
  }
}

function fileLinkNotFound(): ApiError {
  return new ApiError('not_found', {
    message:
      'This file link is not valid: it expired (links serve 15 minutes), was altered, or its credential or response is gone.',
    hint: 'Read the response again (get_response, list_responses or an export) for fresh links.',
  });
}
