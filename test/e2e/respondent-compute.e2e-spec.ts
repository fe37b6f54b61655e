import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

/**
 * Forms that compute on the respondent page (issue 46), without JavaScript: recall of an earlier
 * page's answer, a hidden value and a variable, rendered escaped (`<script>` in an answer shows
 * as text); the ending chosen by the score, with its redirect (303, values URL-encoded); a form
 * without endings shows its own thank-you texts; the stored variables and ending.
 */
describe('respondent page: recall and endings (issue 46)', () => {
  let app: NestFastifyApplication;
  let token: string;
  const EVIL = '<script>alert(1)</script>';

  const stateOf = (html: string) => {
    const m = /<input type="hidden" name="_state" value="([^"]+)"\/>/.exec(html);
    if (!m) throw new Error(`no state in the page:\n${html}`);
    return m[1];
  };

  beforeAll(async () => {
    app = await createTestApp();
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(() => app.close());

  const publish = async (input: Record<string, unknown>) => {
    const created = await callTool(app, token, 'create_form', input);
    expect(created.status).toBe(200);
    await callTool(app, token, 'publish_form', { publicId: created.body.publicId });
    return created.body as {
      publicId: string;
      blocks: Array<{ id: string; ref?: string; choices?: Array<{ id: string; label: string }> }>;
    };
  };

  it('recalls an earlier answer, a hidden value and the score escaped, and ends on the ending the score chooses, redirecting with encoded values', async () => {
    const form = await publish({
      title: 'Quiz',
      hiddenFields: ['who'],
      blocks: [
        { ref: 'name', type: 'short_text', title: 'Your name?' },
        { ref: 'q1', type: 'multiple_choice', title: 'Two plus two?', choices: ['3', '4'], correct: '4' },
        {
          type: 'page_break',
          title: 'Hello {{name}} ({{hidden:who}})',
          jumps: [{ if: { variable: 'score', op: 'gte', value: 1 }, to: 'ending:pass' }],
        },
        { ref: 'again', type: 'short_text', title: 'You scored {{variable:score}}, {{name}}: why?' },
      ],
      endings: [
        { ref: 'fail', title: 'Sorry {{name}}', message: 'Score {{variable:score}} of 1.' },
        {
          ref: 'pass',
          title: 'Well done {{name}}',
          redirectUrl: 'https://example.com/done?n={{name}}&s={{variable:score}}',
        },
      ],
    });
    const [name, q1] = form.blocks;
    const server = app.getHttpServer();
    const post = (fields: Array<[string, string]>) =>
      request(server).post(`/f/${form.publicId}`).type('form').send(new URLSearchParams(fields).toString());

    // A wrong answer: the second page recalls the name and the hidden value as text, and the score (0).
    const first = await request(server).get(`/f/${form.publicId}?who=${encodeURIComponent('<b>x</b>')}`);
    expect(first.status).toBe(200);
    const second = await post([
      ['_state', stateOf(first.text)],
      [name.id, EVIL],
      [q1.id, q1.choices![0].id],
      ['_action', 'next'],
    ]);
    expect(second.status).toBe(200);
    expect(second.text).not.toContain('<script>alert');
    expect(second.text).toContain('Hello &lt;script&gt;alert(1)&lt;/script&gt; (&lt;b&gt;x&lt;/b&gt;)');
    expect(second.text).toContain('You scored 0, &lt;script&gt;alert(1)&lt;/script&gt;: why?');
    expect(second.text).not.toContain('{{');
    const failed = await post([
      ['_state', stateOf(second.text)],
      ['_action', 'submit'],
    ]);
    expect(failed.status).toBe(200);
    expect(failed.text).toContain('Sorry &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(failed.text).toContain('Score 0 of 1.');

    // The right answer: the jump to the "pass" ending, whose redirect carries the values encoded.
    const again = await request(server).get(`/f/${form.publicId}`);
    const passed = await post([
      ['_state', stateOf(again.text)],
      [name.id, 'Ada & <Bob>'],
      [q1.id, q1.choices![1].id],
      ['_action', 'next'],
    ]);
    expect(passed.status).toBe(303);
    expect(passed.headers.location).toBe('https://example.com/done?n=Ada%20%26%20%3CBob%3E&s=1');
    expect(passed.text).toContain('Well done Ada &amp; &lt;Bob&gt;');

    const rows = await app
      .get(DataSource)
      .query(
        'SELECT r.variables, r.ending FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1 ORDER BY r.submitted_at',
        [form.publicId],
      );
    expect(rows).toEqual([
      { variables: { score: 0, correctCount: 0 }, ending: 'fail' },
      { variables: { score: 1, correctCount: 1 }, ending: 'pass' },
    ]);
  });

  it('a form without endings shows its thank-you title and message; a one-page quiz stores its score', async () => {
    const form = await publish({
      title: 'One page',
      thankYou: { title: 'Merci!', message: 'Your score: {{variable:score}}.' },
      blocks: [
        { ref: 'q', type: 'yes_no', title: 'Ready?' },
        { ref: 'c', type: 'dropdown', title: 'Pick', choices: ['a', 'b'], correct: 'b' },
      ],
    });
    const [q, c] = form.blocks;
    const done = await request(app.getHttpServer())
      .post(`/f/${form.publicId}`)
      .type('form')
      .send(
        new URLSearchParams([
          [q.id, 'true'],
          [c.id, c.choices![1].id],
        ]).toString(),
      );
    expect(done.status).toBe(200);
    expect(done.text).toContain('<h1>Merci!</h1>');
    expect(done.text).toContain('Your score: 1.');
  });

  it("an ending's redirect: non-ASCII sent percent-encoded (not a 500 after the response is stored); a value that moves the host shows the ending's page", async () => {
    const form = await publish({
      title: 'Redirect',
      hiddenFields: ['next'],
      blocks: [{ ref: 'a', type: 'short_text', title: 'A?' }],
      endings: [{ ref: 'e', title: 'Done', redirectUrl: 'https://example.com/日本/{{hidden:next}}' }],
    });
    const server = app.getHttpServer();
    const submit = async (next: string) => {
      const page = await request(server).get(`/f/${form.publicId}?next=${encodeURIComponent(next)}`);
      expect(page.status).toBe(200);
      return request(server)
        .post(`/f/${form.publicId}`)
        .type('form')
        .send(
          new URLSearchParams([
            ['_state', stateOf(page.text)],
            [form.blocks[0].id, 'x'],
            ['_action', 'submit'],
          ]).toString(),
        );
    };
    const sent = await submit('é x');
    expect([sent.status, sent.headers.location]).toEqual([303, 'https://example.com/%E6%97%A5%E6%9C%AC/%C3%A9%20x']);

    // A template saved before the save-time check, with recall in its host: the value does not choose the host.
    const db = app.get(DataSource);
    await db.query(
      `UPDATE forms SET compute = jsonb_set(compute, '{endings,0,redirectUrl}', '"https://example.com{{hidden:next}}/"') WHERE public_id = $1`,
      [form.publicId],
    );
    const kept = await submit('.evil.com');
    expect([kept.status, kept.headers.location]).toEqual([200, undefined]);
    expect(kept.text).toContain('<h1>Done</h1>');
    const [{ n }] = await db.query(
      'SELECT count(*)::int AS n FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1',
      [form.publicId],
    );
    expect(n).toBe(2);
  });
});
