import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/** Issue 51: a form in English, French and Arabic; one set_translation call per language; the page in each. */
describe('forms in several languages', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let token: string;
  let publicId: string;
  let name: string;
  let colour: string;
  let red: string;
  let green: string;

  const french = () => ({
    title: 'Avis',
    [`blocks/${name}/title`]: 'Votre nom',
    [`blocks/${colour}/title`]: 'Couleur',
    [`blocks/${colour}/choices/${red}`]: 'Rouge',
  });

  beforeAll(async () => {
    app = await createTestApp();
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    const created = await callTool(app, token, 'create_form', {
      title: 'Feedback',
      languages: ['en', 'fr', 'ar'],
      blocks: [
        { type: 'short_text', title: 'Your name', required: true },
        { type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Green'] },
      ],
    });
    expect(created.status).toBe(200);
    expect(created.body.languages).toEqual(['en', 'fr', 'ar']);
    publicId = created.body.publicId;
    [name, colour] = created.body.blocks.map((b: { id: string }) => b.id);
    [red, green] = created.body.blocks[1].choices.map((c: { id: string }) => c.id);
    await callTool(app, token, 'publish_form', { publicId });
  });
  afterAll(() => app.close());

  it('adds a language in one set_translation call; get_form answers in it and names the texts that fell back', async () => {
    const set = await callTool(app, token, 'set_translation', { publicId, language: 'fr', texts: french() });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ missingTexts: [`blocks/${colour}/choices/${green}`] });
    const fr = await callTool(app, token, 'get_form', { publicId, language: 'fr' });
    expect(fr.status).toBe(200);
    expect(fr.body.title).toBe('Avis');
    expect(fr.body.language).toBe('fr');
    expect(fr.body.blocks[1].choices).toEqual([
      { id: red, label: 'Rouge' },
      { id: green, label: 'Green' },
    ]);
    expect(fr.body.missingTexts).toEqual([`blocks/${colour}/choices/${green}`]);
    // Without a language: the default's texts, as before.
    const en = await callTool(app, token, 'get_form', { publicId });
    expect(en.body.title).toBe('Feedback');
    expect(en.body.missingTexts).toBeUndefined();
  });

  it('refuses a language the form does not list, its default, a key naming nothing and a text too long (400 at the path, keys in the hint)', async () => {
    const notListed = await callTool(app, token, 'set_translation', { publicId, language: 'de', texts: {} });
    expectError(notListed, 400, 'invalid_arguments');
    expect(notListed.body.error.details[0].path).toBe('/language');
    expect(notListed.body.error.hint).toContain('en, fr, ar');
    expectError(
      await callTool(app, token, 'set_translation', { publicId, language: 'en', texts: {} }),
      400,
      'invalid_arguments',
    );
    expectError(
      await callTool(app, token, 'set_translation', { publicId, language: 'x!', texts: {} }),
      400,
      'invalid_arguments',
    );
    const badKey = await callTool(app, token, 'set_translation', {
      publicId,
      language: 'ar',
      texts: { 'blocks/nope/title': 'x', title: 'x'.repeat(501) },
    });
    expectError(badKey, 400, 'invalid_arguments');
    expect(badKey.body.error.details.map((d: { path: string }) => d.path)).toEqual([
      '/texts/blocks~1nope~1title',
      '/texts/title',
    ]);
    expect(badKey.body.error.hint).toContain(`blocks/${colour}/choices/${red}`);
    const badTag = await callTool(app, token, 'update_form', { publicId, languages: ['en', 'not a tag', 'en'] });
    expectError(badTag, 400, 'invalid_arguments');
    expect(badTag.body.error.details.map((d: { path: string }) => d.path)).toEqual(['/languages/1', '/languages/2']);
    expectError(await callTool(app, token, 'get_form', { publicId, language: 'de' }), 400, 'invalid_arguments');
  });

  it('the page: ?lang=, else Accept-Language among the form languages, else the default; French words, Arabic right to left', async () => {
    await callTool(app, token, 'set_translation', {
      publicId,
      language: 'ar',
      texts: { title: 'رأيك', [`blocks/${name}/title`]: 'اسمك' },
    });
    const server = app.getHttpServer();
    const fr = await request(server).get(`/f/${publicId}?lang=fr`);
    expect(fr.status).toBe(200);
    expect(fr.text).toContain('<html lang="fr">');
    expect(fr.text).toContain('<h1>Avis</h1>');
    expect(fr.text).toContain('>Envoyer</button>');
    expect(fr.text).toContain('Rouge');
    expect(fr.text).toContain(`action="/f/${publicId}?lang=fr"`);
    const ar = await request(server).get(`/f/${publicId}`).set('Accept-Language', 'de;q=1, ar-EG;q=0.8, fr;q=0.5');
    expect(ar.text).toContain('<html lang="ar" dir="rtl">');
    expect(ar.text).toContain('اسمك');
    expect(ar.text).toContain('>إرسال</button>');
    expect(ar.headers.vary).toContain('Accept-Language');
    const fallback = await request(server).get(`/f/${publicId}`).set('Accept-Language', 'ja');
    expect(fallback.text).toContain('<html lang="en">');
    expect(fallback.text).toContain('<h1>Feedback</h1>');
    // The switcher: each language named in itself, a link to the page in it.
    expect(fallback.text).toContain(`href="/f/${publicId}?lang=fr"`);
    expect(fallback.text).toContain('français');
  });

  it('a refused post answers in the language it was drawn in', async () => {
    const server = app.getHttpServer();
    const refused = await request(server)
      .post(`/f/${publicId}?lang=fr`)
      .type('form')
      .send({ [colour]: red });
    expect(refused.text).toContain('<html lang="fr">');
    expect(refused.text).toContain('Cette question demande une réponse.');
    expect(refused.text).toContain('Vos réponses comportent 1 problème');
  });

  it('renaming a choice keeps its translation; removing a block drops the translations naming it', async () => {
    const form = (await callTool(app, token, 'get_form', { publicId })).body;
    const renamed = await callTool(app, token, 'update_form', {
      publicId,
      blocks: [
        {
          id: colour,
          type: 'multiple_choice',
          title: 'Colour',
          choices: [
            { id: red, label: 'Crimson' },
            { id: green, label: 'Green' },
          ],
        },
      ],
      acceptAnswerLoss: true,
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.version).toBeGreaterThan(form.version);
    const fr = await callTool(app, token, 'get_form', { publicId, language: 'fr' });
    expect(fr.body.blocks[0].choices[0].label).toBe('Rouge');
    const [row] = await app.get(DataSource).query('SELECT translations FROM forms WHERE public_id = $1', [publicId]);
    expect(Object.keys(row.translations.fr).sort()).toEqual(
      ['title', `blocks/${colour}/title`, `blocks/${colour}/choices/${red}`].sort(),
    );
    // Dropping a language drops its texts.
    await callTool(app, token, 'update_form', { publicId, languages: ['en', 'fr'] });
    const [after] = await app.get(DataSource).query('SELECT translations FROM forms WHERE public_id = $1', [publicId]);
    expect(Object.keys(after.translations)).toEqual(['fr']);
  });
});
