/** GET /auth.md: the walkthrough of authentication for agents, served from docs/auth.md. */
import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiError } from '../common/errors/api-error';
import { Public } from './public.decorator';

/** docs/auth.md from src/auth (ts-jest) or dist/src/auth (built). */
const CANDIDATES = [
  join(__dirname, '..', '..', 'docs', 'auth.md'),
  join(__dirname, '..', '..', '..', 'docs', 'auth.md'),
];

/** GET /auth.md: the walkthrough of authentication for agents (discover, register, authorize, call, refresh, revoke). */
@Public()
@ApiExcludeController()
@Controller()
export class AuthDocController {
  private text?: string;

  @Get('auth.md')
  serve(@Res() res: FastifyReply) {
    if (this.text === undefined) {
      const file = CANDIDATES.find((p) => existsSync(p));
      if (!file)
        throw new ApiError('not_found', {
          message: 'The authentication walkthrough is not installed on this instance.',
          hint: 'The walkthrough is docs/auth.md in the Formwork source; docs/oauth.md describes the authorization server.',
        });
      this.text = readFileSync(file, 'utf8');
    }
    res.type('text/markdown; charset=utf-8').send(this.text);
  }
}
