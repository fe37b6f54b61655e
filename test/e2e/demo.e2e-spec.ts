import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { DemoService } from '../../src/demo/demo.service';
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
});
