import { Controller, Get, Param, Post, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply as Response } from 'fastify';
import { Public } from '../auth/public.decorator';
import { FORM, SettingsHttp } from '../settings/settings-http';
import { messagePage, render } from '../settings/ui';
import { Document } from '../common/html';
import { EmailService } from './email.service';

/**
 * A notification's unsubscribe link (List-Unsubscribe). GET asks (a link scanner that opens it
 * changes nothing); POST unsubscribes, from the page's button or from the mail client's one-click
 * unsubscribe (RFC 8058: a POST of List-Unsubscribe=One-Click, no cookie, no CSRF token: the
 * token in the path is the credential, and it opens this one subscription only).
 */
@Public()
@ApiExcludeController()
@Controller('email/unsubscribe')
export class UnsubscribeController {
  constructor(
    private readonly email: EmailService,
    private readonly http: SettingsHttp,
  ) {}

  @Get(':token')
  async ask(@Param('token') token: string, @Res() res: Response) {
    const title = await this.email.unsubscribeTitle(token);
    if (title === null) return this.http.send(res, 404, gone());
    const html = render(
      <Document title="Unsubscribe · Formwork">
        <main>
          <h1>Stop the emails about “{title}”?</h1>
          <form method="post">
            <input type="hidden" name="List-Unsubscribe" value="One-Click" />
            <button type="submit">Unsubscribe</button>
          </form>
        </main>
      </Document>,
    );
    this.http.send(res, 200, html);
  }

  @Post(':token')
  @RouteConfig(FORM)
  async unsubscribe(@Param('token') token: string, @Res() res: Response) {
    if (!(await this.email.unsubscribe(token))) return this.http.send(res, 404, gone());
    this.http.send(
      res,
      200,
      messagePage('Unsubscribed', 'You get no more emails about this form. Choose again on the Email settings page.'),
    );
  }
}

function gone(): string {
  return messagePage('Nothing to unsubscribe', 'This link is unknown, or you unsubscribed already.');
}
