import { Get, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import type { ReactNode } from 'react';
import { Role } from '../common/access/roles';
import { NoticeKey } from './notices';
import { Ctx, FORM, SettingsHttp } from './settings-http';
import { FieldErrors, render } from './ui';

/** What a "New ..." form post comes to: the form again with its problems, or a page to go to. */
export type Created<V> =
  { errors: FieldErrors; values: V; status?: number; notice?: string } | { to: string; notice?: NoticeKey };

/**
 * A section that is a list with a "New ..." form below it (tokens, members, webhooks): GET shows
 * the list, POST to the same path creates, then either shows the form again with its problems
 * (400, or `status`) or redirects. A subclass says what the page is and what creating does.
 */
export abstract class ListSection<V> {
  protected abstract readonly http: SettingsHttp;

  /** `minimum`: the role the section's pages need. */
  constructor(private readonly minimum: Role) {}

  /** The page, with the form's problems and values (a notice of its own, e.g. "X was added"). */
  protected abstract page(ctx: Ctx, errors: FieldErrors, values: V, notice?: string): Promise<ReactNode>;
  protected abstract create(ctx: Ctx): Promise<Created<V>>;

  @Get()
  list(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, this.minimum, (ctx) => this.show(ctx, res, 200, {}, {} as V));
  }

  @Post()
  @RouteConfig(FORM)
  post(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, this.minimum, async (ctx) => {
      const out = await this.create(ctx);
      if ('to' in out) return this.http.seeOther(res, out.to, out.notice);
      await this.show(ctx, res, out.status ?? 400, out.errors, out.values, out.notice);
    });
  }

  private async show(ctx: Ctx, res: Response, status: number, errors: FieldErrors, values: V, notice?: string) {
    this.http.send(res, status, render(await this.page(ctx, errors, values, notice)));
  }
}
