import { Get, Injectable, Param, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { Role } from '../common/access/roles';
import { NoticeKey } from './notices';
import { SessionsService } from './sessions.service';
import { Ctx, FORM, SettingsHttp, SettingsPages } from './settings-http';
import { notFound } from './settings.service';
import { ConfirmPage, render } from './ui';

/**
 * A destructive action of a section (revoke a token, remove a member, disconnect an app, delete
 * an endpoint, rotate its secret): always asked first. GET <section>/<id>/<action> shows the
 * question, POST to the same path does it and redirects with the notice of the change.
 */
export interface Destructive<T> {
  minimum: Role;
  /** The thing acted on, or notFound(). */
  find(ctx: Ctx, id: string): Promise<T>;
  ask(thing: T, ctx: Ctx): { title: string; question: string; button: string };
  /** Where Cancel goes, below the section (default: the section's list). */
  back?(thing: T): string;
  /** With a nonce: a second post of one confirmation (a double click) does nothing more. */
  once?: boolean;
  act(thing: T, ctx: Ctx): Promise<unknown>;
  /** Where it goes after, below the section (default: the section's list), with this notice. */
  then: { to?: string; notice?: NoticeKey };
}

/** The destructive actions, by "<section>/<action>": each section's controller adds its own. */
@Injectable()
export class Confirmations {
  private readonly actions = new Map<string, Destructive<unknown>>();

  add<T>(section: string, action: string, d: Destructive<T>) {
    this.actions.set(`${section}/${action}`, d as Destructive<unknown>);
  }

  get(section: string, action: string) {
    return this.actions.get(`${section}/${action}`);
  }
}

type Target = { section: string; id: string; action: string };

/** The one confirmation step of the settings pages, for every section's destructive actions. */
@SettingsPages('w/:slug')
export class ConfirmController {
  constructor(
    private readonly http: SettingsHttp,
    private readonly confirmations: Confirmations,
    private readonly sessions: SessionsService,
  ) {}

  @Get(':section/:id/:action')
  ask(@Param() t: Target, @Req() req: Request, @Res() res: Response) {
    return this.with(t, req, res, async (d, ctx) => {
      const thing = await d.find(ctx, t.id);
      const section = `${ctx.base}/${t.section}`;
      const page = (
        <ConfirmPage
          chrome={{ ...ctx.chrome, current: t.section }}
          {...d.ask(thing, ctx)}
          back={`${section}${d.back?.(thing) ?? ''}`}
          action={`${section}/${encodeURIComponent(t.id)}/${t.action}`}
          hidden={d.once ? { nonce: this.sessions.nonce() } : {}}
        />
      );
      this.http.send(res, 200, render(page));
    });
  }

  @Post(':section/:id/:action')
  @RouteConfig(FORM)
  act(@Param() t: Target, @Req() req: Request, @Res() res: Response) {
    return this.with(t, req, res, async (d, ctx) => {
      const thing = await d.find(ctx, t.id);
      const section = `${ctx.base}/${t.section}`;
      if (d.once && !(await this.sessions.useNonce(ctx.body.nonce)))
        return this.http.seeOther(res, `${section}${d.back?.(thing) ?? ''}`);
      await d.act(thing, ctx);
      this.http.seeOther(res, `${section}${d.then.to ?? ''}`, d.then.notice);
    });
  }

  private async with(t: Target, req: Request, res: Response, fn: (d: Destructive<unknown>, ctx: Ctx) => unknown) {
    const d = this.confirmations.get(t.section, t.action);
    // An unknown action is a 404 page, after the same sign-in and workspace checks as a known one.
    await this.http.run(req, res, d?.minimum ?? 'viewer', (ctx) => {
      if (!d) throw notFound();
      return fn(d, ctx);
    });
  }
}
