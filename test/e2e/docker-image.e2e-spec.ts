import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join, posix } from 'node:path';

/**
 * No Docker engine runs in CI, so what would break `docker build` / `docker compose up` is checked
 * from the files: every COPY names something the build context keeps (the context is the
 * repository root filtered by the dockerignore, with Docker's pattern rules), the HEALTHCHECK asks
 * the port the service listens on, the image runs Node 24, and Compose builds the image once.
 */
const ROOT = join(__dirname, '..', '..');
const DOCKERFILE = 'docker/Dockerfile';
// BuildKit reads <Dockerfile>.dockerignore when it exists; the legacy builder only the root one.
const IGNORE_FILES = ['docker/Dockerfile.dockerignore', '.dockerignore'];

describe('the Docker image', () => {
  const instructions = parseDockerfile(read(DOCKERFILE));

  describe.each(IGNORE_FILES)('build context filtered by %s', (ignoreFile) => {
    const kept = contextFilter(read(ignoreFile));

    it('keeps every source a COPY names (other than --from stages), so the build finds it', () => {
      const copies = instructions.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD');
      const sources = copies.flatMap((i) => copySources(i.args)).filter((c) => !c.fromStage);
      expect(sources.length).toBeGreaterThan(0);
      const missing = sources.map((c) => c.source).filter((source) => !inContext(source, kept));
      expect(missing).toEqual([]);
    });

    it('leaves out local state and secrets (.env, node_modules, dist, data, .git)', () => {
      for (const path of [
        '.env',
        'node_modules/pg/package.json',
        'dist/src/main.js',
        'data/embedded.json',
        '.git/config',
      ]) {
        expect({ path, kept: kept(path) }).toEqual({ path, kept: false });
      }
    });
  });

  it('runs Node 24 LTS in every stage', () => {
    const images = instructions
      .filter((i) => i.keyword === 'FROM')
      .map((i) => i.args.split(/\s+/).find((w) => !w.startsWith('--')));
    expect(images.length).toBeGreaterThan(0);
    for (const image of images) expect(image).toMatch(/^node:24([.-]|$)/);
    // The image's Node is the one .nvmrc names for development; npm start still accepts Node 20.19+.
    expect(read('.nvmrc').trim()).toBe('24');
    expect(JSON.parse(read('package.json')).engines.node).toBe('>=20.19');
  });

  describe('HEALTHCHECK', () => {
    const healthcheck = instructions.find((i) => i.keyword === 'HEALTHCHECK');
    const command = healthcheck ? healthcheckShellCommand(healthcheck.args) : '';
    let server: Server;
    let readyStatus = 200;

    beforeAll(async () => {
      server = createServer((req, res) => {
        res.writeHead(req.url === '/readyz' ? readyStatus : 404).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    // Run as Docker runs the shell form: /bin/sh -c, with the container's environment.
    const run = (env: NodeJS.ProcessEnv) =>
      new Promise<number | null>((resolve) => {
        const child = spawn('/bin/sh', ['-c', command], { env: { ...process.env, ...env }, stdio: 'ignore' });
        child.on('exit', (code) => resolve(code));
      });

    it('passes when /readyz on the port in PORT answers 200', async () => {
      expect(command).not.toBe('');
      readyStatus = 200;
      expect(await run({ PORT: String((server.address() as AddressInfo).port) })).toBe(0);
    });

    it('fails when /readyz on the port in PORT answers 503 (the database does not answer)', async () => {
      readyStatus = 503;
      expect(await run({ PORT: String((server.address() as AddressInfo).port) })).toBe(1);
    });
  });
});

describe('docker/compose.yaml', () => {
  it('builds the image once: one service builds it, the others run the same image', () => {
    const services = composeServices(read('docker/compose.yaml'));
    const builders = services.filter((s) => s.build);
    expect(builders.map((s) => s.name)).toEqual(['migrate']);
    const built = builders[0].image;
    expect(built).toBe('formwork:local');
    expect(services.find((s) => s.name === 'app')).toMatchObject({ build: false, image: built });
  });
});

describe('dockerignore pattern rules (as Docker applies them)', () => {
  it('matches like Docker: parents, "*" within one segment, "**" across any, "!" re-includes, last match wins', () => {
    const kept = contextFilter(['node_modules', '*.log', 'docs/*', '!docs/keep.md', '**/tmp', 'a/**/z.txt'].join('\n'));
    expect(kept('node_modules/pg/index.js')).toBe(false); // a pattern naming a directory covers what is inside
    expect(kept('err.log')).toBe(false);
    expect(kept('src/err.log')).toBe(true); // "*" does not cross "/"
    expect(kept('docs/auth.md')).toBe(false);
    expect(kept('docs/keep.md')).toBe(true);
    expect(kept('x/y/tmp/file')).toBe(false);
    expect(kept('tmp')).toBe(false); // "**/" also matches no directory at all
    expect(kept('a/z.txt')).toBe(false);
    expect(kept('a/b/c/z.txt')).toBe(false);
    expect(kept('src/main.ts')).toBe(true);

    const allowList = contextFilter('**\n!src/**\n**/*.spec.ts\n!src/keep.spec.ts');
    expect(allowList('package.json')).toBe(false);
    expect(allowList('src/a/b.ts')).toBe(true);
    expect(allowList('src/a/b.spec.ts')).toBe(false);
    expect(allowList('src/keep.spec.ts')).toBe(true);
  });
});

function read(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

interface Instruction {
  keyword: string;
  args: string;
}

/** Instructions with their continuation lines joined; comment lines dropped (also inside a continuation). */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line.startsWith('#') || (line === '' && pending === '')) continue;
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1) + ' ';
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    const m = /^(\S+)\s*(.*)$/.exec(full);
    if (m) out.push({ keyword: m[1].toUpperCase(), args: m[2] });
  }
  return out;
}

/** The sources of COPY/ADD (shell or JSON form): every argument but the last, after the --flags. */
function copySources(args: string): { source: string; fromStage: boolean }[] {
  const words = args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith('--'));
  const rest = args.slice(flags.reduce((n, f) => args.indexOf(f, n) + f.length, 0)).trim();
  const paths: string[] = rest.startsWith('[') ? JSON.parse(rest) : rest.split(/\s+/);
  const fromStage = flags.some((f) => f.startsWith('--from='));
  return paths.slice(0, -1).map((source) => ({ source, fromStage }));
}

/** The shell-form command of a HEALTHCHECK (after its --options and CMD). */
function healthcheckShellCommand(args: string): string {
  const m = /^(?:--\S+\s+)*CMD\s+(.*)$/.exec(args);
  if (!m) return '';
  if (m[1].startsWith('[')) {
    const [exe, ...rest] = JSON.parse(m[1]) as string[];
    // Exec form: no shell. Quote each word for /bin/sh so the test runs exactly those arguments.
    return [exe, ...rest].map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ');
  }
  return m[1];
}

/**
 * Docker's .dockerignore rules (moby/patternmatcher, as BuildKit applies them): "#" comments,
 * patterns cleaned and taken from the context root, "*" and "?" within one path segment, "**" any
 * number of segments (also none), "[...]" character classes; a pattern also matches everything
 * under a directory it matches; the last pattern that matches decides, and "!" re-includes.
 * Returns whether a path (relative, with "/") is kept in the build context.
 */
function contextFilter(ignoreText: string): (path: string) => boolean {
  const patterns = ignoreText
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const include = l.startsWith('!');
      const cleaned = posix
        .normalize(include ? l.slice(1).trim() : l)
        .replace(/^\/+/, '')
        .replace(/\/+$/, '');
      return { include, test: compilePattern(cleaned) };
    });
  return (path: string) => {
    const parts = path.split('/');
    const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/')); // its parents, then itself
    let excluded = false;
    for (const p of patterns) {
      // An exclusion only matters while the path is kept, a re-inclusion only while it is excluded.
      if (p.include !== excluded) continue;
      if (candidates.some((c) => p.test(c))) excluded = !p.include;
    }
    return !excluded;
  };
}

function compilePattern(pattern: string): (path: string) => boolean {
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '*' && pattern[i + 1] === '*') {
      i++;
      if (pattern[i + 1] === '/') i++;
      re += i + 1 === pattern.length ? '.*' : '(.*/)?';
    } else if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else if (ch === '\\' && i + 1 < pattern.length) re += '\\' + pattern[++i];
    else if (ch === '[' || ch === ']') re += ch;
    else re += ch.replace(/[.+()|{}$^]/g, '\\$&');
  }
  const regex = new RegExp(re + '$');
  return (path) => regex.test(path);
}

/** Whether a COPY source (a file, a directory or a glob, relative to the context root) reaches the build. */
function inContext(source: string, kept: (path: string) => boolean): boolean {
  const rel = posix.normalize(source).replace(/^\/+/, '').replace(/\/+$/, '');
  if (/[*?[]/.test(rel)) {
    const test = compilePattern(rel);
    return filesUnder('.').some((f) => test(f) && kept(f));
  }
  if (!existsSync(join(ROOT, rel))) return false;
  if (!statSync(join(ROOT, rel)).isDirectory()) return kept(rel);
  // A directory reaches the build when something in it does (its excluded files are left behind).
  return filesUnder(rel).some(kept);
}

function filesUnder(dir: string): string[] {
  const skip = new Set(['node_modules', '.git', 'dist', 'data']);
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = dir === '.' ? e.name : `${dir}/${e.name}`;
    if (e.isDirectory()) return skip.has(e.name) ? [] : filesUnder(rel);
    return [rel];
  });
}

/** Top-level services of a Compose file with whether each has a build and its image (enough YAML for ours). */
function composeServices(text: string): { name: string; build: boolean; image?: string }[] {
  const lines = text.split(/\r?\n/);
  const start = lines.findIndex((l) => /^services:\s*$/.test(l));
  expect(start).toBeGreaterThanOrEqual(0);
  const services: { name: string; build: boolean; image?: string }[] = [];
  let serviceIndent: number | undefined;
  let keyIndent: number | undefined;
  for (const line of lines.slice(start + 1)) {
    if (/^\S/.test(line)) break; // the next top-level key
    const m = /^( +)([A-Za-z0-9._-]+):(.*)$/.exec(line);
    if (!m) continue; // blank lines, comments, list items
    const depth = m[1].length;
    serviceIndent ??= depth;
    if (depth === serviceIndent) {
      services.push({ name: m[2], build: false });
      keyIndent = undefined;
      continue;
    }
    keyIndent ??= depth; // the first key inside a service sets the indentation of its keys
    const service = services[services.length - 1];
    if (depth !== keyIndent || !service) continue;
    if (m[2] === 'build') service.build = true;
    if (m[2] === 'image') service.image = m[3].trim().replace(/^["']|["']$/g, '');
  }
  return services;
}
