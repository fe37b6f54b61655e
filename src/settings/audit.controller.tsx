import { Get, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { Ctx, pageNumber, SettingsHttp, SettingsPages, text } from './settings-http';
import { AuditLogRow, SettingsService } from './settings.service';
import { FilterButton, Layout, Pager, render, Table, when } from './ui';

type Log = Awaited<ReturnType<SettingsService['auditLog']>>;
type Filter = { actor?: string; action?: string; page: number };

export function actorLabel(r: Pick<AuditLogRow, 'actor_kind' | 'email' | 'token_name' | 'app'>): string {
  if (r.actor_kind === 'api_token') return `token ${r.token_name ?? '(deleted)'}${r.email ? ` of ${r.email}` : ''}`;
  if (r.actor_kind === 'oauth') return `app ${r.app ?? '(unknown)'}${r.email ? ` for ${r.email}` : ''}`;
  return r.email ?? 'a person';
}

function AuditPage({ ctx, log, filter }: { ctx: Ctx; log: Log; filter: Filter }) {
  const query = {
    ...(filter.actor ? { actor: filter.actor } : {}),
    ...(filter.action ? { action: filter.action } : {}),
  };
  return (
    <Layout title="Audit log" chrome={{ ...ctx.chrome, current: 'audit' }}>
      <h1>Audit log</h1>
      <form method="get" action={`${ctx.base}/audit`} className="actions">
        <div className="field">
          <label htmlFor="actor">Who</label>
          <select id="actor" name="actor" defaultValue={filter.actor ?? ''}>
            <option value="">Anyone</option>
            {log.actors.map((a) => (
              <option key={a.actor_id} value={a.actor_id}>
                {actorLabel(a)}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="action">Action</label>
          <select id="action" name="action" defaultValue={filter.action ?? ''}>
            <option value="">Any</option>
            {log.actions.map((a) => (
              <option key={a}>{a}</option>
            ))}
          </select>
        </div>
        <FilterButton />
      </form>
      {log.rows.length ? (
        <Table label="Audit log" head={['When', 'Who', 'What', 'Object', 'Request id']}>
          {log.rows.map((r, i) => (
            <tr key={i}>
              <td>{when(r.at)}</td>
              <td>{actorLabel(r)}</td>
              <td>{r.action}</td>
              <td>
                <code>{r.subject_id}</code>
              </td>
              <td>
                <code>{r.request_id ?? '—'}</code>
              </td>
            </tr>
          ))}
        </Table>
      ) : (
        <p>No events.</p>
      )}
      <Pager query={query} page={filter.page} more={log.more} />
    </Layout>
  );
}

/** The audit log (admins), filtered by who and what, 50 events a page. */
@SettingsPages('w/:slug/audit')
export class AuditController {
  constructor(
    private readonly http: SettingsHttp,
    private readonly settings: SettingsService,
  ) {}

  @Get()
  audit(@Query() query: Record<string, unknown>, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', async (ctx) => {
      const filter = {
        actor: text(query.actor).slice(0, 200) || undefined,
        action: text(query.action).slice(0, 100) || undefined,
        page: pageNumber(query),
      };
      const log = await this.settings.auditLog(ctx.access, filter);
      this.http.send(res, 200, render(<AuditPage ctx={ctx} log={log} filter={filter} />));
    });
  }
}
