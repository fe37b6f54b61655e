import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { createTestApp } from '../utils/create-test-app';
import { ROOT } from '../utils/cluster';

/** The version the project's lint uses (npx fetches it once into npm's cache). */
const SPECTRAL = '@stoplight/spectral-cli@6.16.3';

/**
 * /openapi.json passes Spectral's spectral:oas ruleset (.spectral.yaml) without an error or a
 * warning: what code generators and API catalogues run on it.
 */
describe('the OpenAPI document under Spectral', () => {
  let app: NestFastifyApplication;
  let dir: string;

  beforeAll(async () => {
    app = await createTestApp();
    dir = mkdtempSync(join(tmpdir(), 'formwork-openapi-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await app.close();
  });

  it('reports no errors and no warnings (spectral:oas)', async () => {
    const doc = (await request(app.getHttpServer()).get('/openapi.json')).body;
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    let out: string;
    try {
      ({ stdout: out } = await promisify(execFile)(
        'npx',
        ['--yes', SPECTRAL, 'lint', '--ruleset', join(ROOT, '.spectral.yaml'), '--format', 'json', '--quiet', file],
        { cwd: dir, maxBuffer: 16 << 20 },
      ));
    } catch (err) {
      // Spectral exits 1 when it reports something; its findings are still on stdout.
      out = (err as { stdout?: string }).stdout ?? '';
      if (!out.trim().startsWith('[')) throw err;
    }
    const findings = (JSON.parse(out) as Array<{ code: string; message: string; path: string[]; severity: number }>)
      .filter((f) => f.severity <= 1) // 0 error, 1 warning
      .map((f) => `${f.code} at ${f.path.join('.')}: ${f.message}`);
    expect(findings).toEqual([]);
  }, 300_000);
});
