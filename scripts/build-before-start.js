// npm start's prestart: builds dist/ (tsc -p tsconfig.build.json, as `npm run build`) and says so
// first, since the first build takes about a minute and printed nothing before. When dist/ is newer
// than every source (src/, migrations/, the tsconfig files, package.json) it starts at once.
// The lines go to stderr: stdout stays the service's own.
'use strict';
const { spawnSync } = require('node:child_process');
const { existsSync, readdirSync, statSync, utimesSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const built = join(root, 'dist', 'src', 'main.js');
// Written after each build here: tsc leaves an output file untouched when its content is unchanged,
// so dist/'s own times do not say when it was last built.
const stamp = join(root, 'dist', '.built-at');

/** The newest modification time among the files under `dir` (recursively), 0 when there are none. */
function newest(dir) {
  if (!existsSync(dir)) return 0;
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

function upToDate() {
  if (!existsSync(built) || !existsSync(stamp)) return false;
  const sources = Math.max(
    newest(join(root, 'src')),
    newest(join(root, 'migrations')),
    ...['tsconfig.json', 'tsconfig.build.json', 'package.json'].map((f) => statSync(join(root, f)).mtimeMs),
  );
  return statSync(stamp).mtimeMs >= sources;
}

if (upToDate()) process.exit(0);

const first = !existsSync(built);
process.stderr.write(`Building Formwork (TypeScript → dist/)${first ? ', about a minute on first start' : ''}...\n`);
const started = Date.now();
const startedAt = new Date(started);
const tsc = require.resolve('typescript/bin/tsc');
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
  cwd: root,
  stdio: 'inherit',
});
if (result.status !== 0) {
  process.stderr.write('The build failed (the errors are above): Formwork was not started.\n');
  process.exit(result.status ?? 1);
}
// Stamped with the time the build began: a source saved during the build makes the next start build again.
writeFileSync(stamp, `${startedAt.toISOString()}\n`);
utimesSync(stamp, startedAt, startedAt);
process.stderr.write(`Built in ${Math.round((Date.now() - started) / 1000)} s; starting.\n`);
