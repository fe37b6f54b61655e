import { Get, Req, Res } from '@nestjs/common';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { Confirmations } from './confirm.controller';
import { Ctx, SettingsHttp, SettingsPages } from './settings-http';
import { notFound, SettingsService } from './settings.service';
import { Hidden, Layout, render, Table, when } from './ui';

type App = Awaited<ReturnType<SettingsService['listApps']>>[number];
const appName = (g: App) => g.client_name ?? g.client_id;

function AppsPage({ ctx, apps }: { ctx: Ctx; apps: App[] }) {
  const a = ctx.access;
  const everyone = a.role === 'owner' || a.role === 'admin';
  return (
    <Layout title="Connected apps" chrome={{ ...ctx.chrome, current: 'apps' }}>
      <h1>Connected apps</h1>
      <p className="desc">
        {everyone ? 'Every app connected to this workspace, by anyone.' : 'The apps you connected to this workspace.'}{' '}
        Disconnecting stops the app&apos;s tokens within 5 seconds.
      </p>
      {apps.length ? (
        <Table label="Connected apps" head={['App', 'Person', 'Workspace', 'Scopes', 'Connected', 'Last token', '']}>
          {apps.map((g) => (
            <tr key={g.grant_id}>
              <td>{appName(g)}</td>
              <td>{g.email}</td>
              <td>{a.workspace.name}</td>
              <td>{g.scopes.join(', ')}</td>
              <td>{when(g.created_at)}</td>
              <td>{when(g.last_used)}</td>
              <td>
                <a href={`${ctx.base}/apps/${encodeURIComponent(g.grant_id)}/disconnect`}>
                  Disconnect<Hidden> {appName(g)}</Hidden>
                </a>
              </td>
            </tr>
          ))}
        </Table>
      ) : (
        <p>No connected apps.</p>
      )}
    </Layout>
  );
}

/** Connected apps (every role: admins see everyone's, others their own), Disconnect (asked first). */
@SettingsPages('w/:slug/apps')
export class AppsController {
  constructor(
    private readonly http: SettingsHttp,
    private readonly settings: SettingsService,
    confirmations: Confirmations,
  ) {
    confirmations.add('apps', 'disconnect', {
      minimum: 'viewer',
      find: async (ctx, grantId) => {
        const app = (await this.settings.listApps(ctx.access)).find((g) => g.grant_id === grantId);
        if (!app) throw notFound();
        return app;
      },
      ask: (g) => ({
        title: `Disconnect ${appName(g)}?`,
        question: `${appName(g)} (connected by ${g.email}) loses access: its tokens stop working within 5 seconds. Connecting it again needs a new sign-in and consent.`,
        button: 'Disconnect',
      }),
      act: (g, ctx) => this.settings.disconnect(ctx.access, g.grant_id),
      then: { notice: 'app-disconnected' },
    });
  }

  @Get()
  apps(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', async (ctx) => {
      const apps = await this.settings.listApps(ctx.access);
      this.http.send(res, 200, render(<AppsPage ctx={ctx} apps={apps} />));
    });
  }
}
