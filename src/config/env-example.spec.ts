import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getMetadataStorage } from 'class-validator';
import { EnvSchema, loadConfig } from './config';

/**
 * .env.example is where a newcomer or an operator finds every setting: it must list each variable
 * the service and the CLI read (a new one fails this test until it is documented there), and
 * nothing they do not read.
 */
const ROOT = join(__dirname, '..', '..');

/** The variables checked by EnvSchema, plus any `env.NAME` / `process.env.NAME` read elsewhere in src/. */
function variablesRead(): string[] {
  const names = new Set(
    getMetadataStorage()
      .getTargetValidationMetadatas(EnvSchema, '', true, false)
      .map((m) => m.propertyName),
  );
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory()
        ? sources(join(dir, e.name))
        : e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts')
          ? [join(dir, e.name)]
          : [],
    );
  for (const file of sources(join(ROOT, 'src'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(
      /\benv(?:\.([A-Z][A-Z0-9_]*)\b|\[['"]([A-Z][A-Z0-9_]*)['"]\])/g,
    ))
      names.add(m[1] ?? m[2]);
  }
  return [...names].sort();
}

/** NAME=value lines, commented out (defaults) or not. */
function variablesListed(): string[] {
  const text = readFileSync(join(ROOT, '.env.example'), 'utf8');
  return [...text.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]).sort();
}

describe('.env.example', () => {
  it('lists every environment variable the service and the CLI read, once, and no other', () => {
    const read = variablesRead();
    expect(read).toEqual(expect.arrayContaining(['DATABASE_URL', 'PORT', 'REDIS_URL', 'BOOTSTRAP_DEMO'])); // the scan finds them
    expect(variablesListed()).toEqual(read);
  });

  it('holds only values the service accepts (each example line, uncommented, starts it without a configuration error)', () => {
    const text = readFileSync(join(ROOT, '.env.example'), 'utf8');
    const env: Record<string, string> = {};
    for (const m of text.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=(.*)$/gm)) env[m[1]] = m[2].trim();
    expect(() => loadConfig(env)).not.toThrow();
  });
});
