'use strict';
/**
 * Fallback seeding for bench/get-form.js, used only when `node dist/src/cli/main.js demo --json`
 * fails (the run then says so loudly). It calls the same compiled DemoService.create() that the
 * CLI's `demo` does, but in an application context of the service's own AppModule (the module graph
 * the server runs, without HTTP), and prints the same JSON on stdout.
 *
 * Why: the CLI's `demo` has broken before (commit 2999b48: validateArgs() validated an instance of
 * an anonymous class, which class-validator 0.15 refuses with "an unknown value was passed to the
 * validate function"), and the benchmark should still measure the server then.
 *
 * Env: DATABASE_URL (required). Needs a build (dist/).
 */
require('reflect-metadata');
const { join } = require('node:path');
const { NestFactory } = require('@nestjs/core');

const dist = join(__dirname, '..', 'dist', 'src');
const { loadConfig } = require(join(dist, 'config', 'config'));
const { AppModule } = require(join(dist, 'app.module'));
const { DemoService } = require(join(dist, 'demo', 'demo.service'));

async function main() {
  const config = loadConfig(process.env);
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set');
  // abortOnError: false, so that a wiring error is reported here instead of a silent exit(1).
  const ctx = await NestFactory.createApplicationContext(AppModule.forRoot(config, config.databaseUrl), {
    logger: ['error', 'fatal'],
    abortOnError: false,
  });
  try {
    const demo = await ctx.get(DemoService).create();
    process.stdout.write(`${JSON.stringify(demo)}\n`);
  } finally {
    await ctx.close();
  }
}

main().catch((err) => {
  process.stderr.write(`seed-demo: ${err && err.stack ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
