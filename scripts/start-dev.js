// npm run start:dev: the service in watch mode, with nothing beyond the TypeScript compiler already
// in devDependencies. TypeScript's watch mode compiles src/ and migrations/ into dist/ as
// `npm run build` does; after every compile without errors the service (dist/src/main.js) is
// stopped with SIGTERM, which it drains, and started again. A compile with errors leaves the
// running service as it is. Ctrl-C (or SIGTERM) stops both. The environment is the one npm start
// reads (see .env.example).
'use strict';
const { spawn } = require('node:child_process');
const { join } = require('node:path');
const ts = require('typescript');

const root = join(__dirname, '..');
const log = (message) => process.stdout.write(`[start:dev] ${message}\n`);

let service; // the running service, if any
let restartWhenStopped = false;
let stopping = false;

function startService() {
  const child = spawn(process.execPath, ['--enable-source-maps', join(root, 'dist', 'src', 'main.js')], {
    cwd: root,
    stdio: 'inherit',
  });
  service = child;
  child.on('exit', (code, signal) => {
    service = undefined;
    if (stopping) process.exit(0);
    if (restartWhenStopped) {
      restartWhenStopped = false;
      startService();
    } else {
      log(
        `the service stopped (${signal ?? `exit code ${code}`}); it starts again after the next change that compiles`,
      );
    }
  });
}

function restartService() {
  if (!service) return startService();
  if (restartWhenStopped) return; // already stopping; the new one starts on exit
  restartWhenStopped = true;
  log('compiled: restarting the service');
  service.kill('SIGTERM');
}

const formatHost = {
  getCanonicalFileName: (f) => f,
  getCurrentDirectory: ts.sys.getCurrentDirectory,
  getNewLine: () => ts.sys.newLine,
};
const host = ts.createWatchCompilerHost(
  join(root, 'tsconfig.build.json'),
  { preserveWatchOutput: true },
  ts.sys,
  ts.createEmitAndSemanticDiagnosticsBuilderProgram,
  (diagnostic) => process.stderr.write(ts.formatDiagnosticsWithColorAndContext([diagnostic], formatHost)),
  // errorCount is given with the status that ends a compile ("Found N errors. Watching for file changes.").
  (diagnostic, _newLine, _options, errorCount) => {
    log(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    if (errorCount === 0 && !stopping) restartService();
  },
);
const watch = ts.createWatchProgram(host);

function stop() {
  if (stopping) return;
  stopping = true;
  watch.close();
  if (!service) process.exit(0);
  // On Ctrl-C the terminal has sent SIGINT to the service too; it ignores a second signal.
  service.kill('SIGTERM');
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
