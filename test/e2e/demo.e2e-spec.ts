import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import request from 'supertest';
import { DEMO_OWNER_EMAIL, DemoService } from '../../src/demo/demo.service';
import { SessionsService } from '../../src/settings/sessions.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

describe('demo workspace', () => {
  let app: NestFastifyApplication;

  beforeAll(async () => {
    app = await createTestApp();
  });
  afterAll(() => app.close());

  it('has a history that reads right: created < published < responses < closed, all in the past', async () => {
    const before = Date.now();
    const demo = await app.get(DemoService).create();
    const forms = await callTool(app, demo.token, 'list_forms', {});
    expect(forms.status).toBe(200);
    expect(forms.body.forms.map((f: { status: string }) => f.status).sort()).toEqual(['closed', 'draft', 'published']);

    const ms = (iso: string | null | undefined) => (iso ? Date.parse(iso) : undefined);
    for (const listed of forms.body.forms as Array<{ publicId: string; status: string }>) {
      const form = (await callTool(app, demo.token, 'get_form', { publicId: listed.publicId })).body;
      const created = ms(form.createdAt)!;
      const published = ms(form.publishedAt);
      const closed = ms(form.closedAt);
      expect(created).toBeLessThan(before);
      if (listed.status === 'draft') expect([published, closed]).toEqual([undefined, undefined]);
      else expect(published).toBeGreaterThan(created);
      if (listed.status === 'closed') {
        expect(closed).toBeGreaterThan(published!);
        expect(closed).toBeLessThan(before);
      } else expect(closed).toBeUndefined();

      // Every response after the form's publication and before its closing (or now).
      const [span] = await app.get(DataSource).query(
        `SELECT min(r.submitted_at) AS first, max(r.submitted_at) AS last, count(*)::int AS n
           FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1`,
        [listed.publicId],
      );
      if (span.n === 0) continue;
      expect(listed.status).not.toBe('draft');
      expect(new Date(span.first).getTime()).toBeGreaterThan(published!);
      expect(new Date(span.last).getTime()).toBeLessThan(closed ?? before);
    }
    // The feedback form has its 120 responses, all within the orderings above.
    const feedback = forms.body.forms.find((f: { status: string }) => f.status === 'published');
    expect(
      (await callTool(app, demo.token, 'list_responses', { publicId: feedback.publicId, limit: 1 })).body.total,
    ).toBe(120);
  });

  it('the feedback form has a hidden field, source, that the results page filters by (the quick start leads there)', async () => {
    const demo = await app.get(DemoService).create();
    const forms = await callTool(app, demo.token, 'list_forms', {});
    const feedback = forms.body.forms.find((f: { status: string }) => f.status === 'published');
    const form = (await callTool(app, demo.token, 'get_form', { publicId: feedback.publicId })).body;
    expect(form.hiddenFields).toEqual(['source']);
    const counts: Record<string, number> = {};
    for (const source of ['newsletter', 'twitter', 'direct']) {
      const listed = await callTool(app, demo.token, 'list_responses', {
        publicId: feedback.publicId,
        limit: 1,
        where: { hidden: 'source', op: 'equals', value: source },
      });
      counts[source] = listed.body.total;
    }
    expect(counts).toEqual({ newsletter: 52, twitter: 34, direct: 34 });
    // The owner's Responses page offers it, and filters by it.
    const owner = await app.get(WorkspacesService).findUserByEmail(DEMO_OWNER_EMAIL);
    const cookie = `fw_session=${await app.get(SessionsService).start(owner!.id)}`;
    const url = `/settings/w/demo/forms/${feedback.publicId}/responses`;
    const page = await request(app.getHttpServer()).get(url).set('Cookie', cookie);
    expect(page.text).toContain('<option value="hidden:source"');
    const filtered = await request(app.getHttpServer())
      .get(`${url}?block=hidden%3Asource&op=equals&value=twitter`)
      .set('Cookie', cookie);
    expect(filtered.status).toBe(200);
    expect(filtered.text).toContain('34 responses match');
  });
});
