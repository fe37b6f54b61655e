'use strict';
/**
 * Preloaded (`node -r bench/cpu-profile-hook.js ...`) into a server that bench/get-form.js profiles
 * when BENCH_PROFILE=1, so that the profile covers only the load and not the boot: the first
 * SIGUSR2 starts V8's CPU profiler, the second stops it, writes the profile to
 * BENCH_CPU_PROFILE_OUT and prints "cpu-profile-written" on stdout. Loads nothing else.
 */
const inspector = require('node:inspector');
const { writeFileSync } = require('node:fs');

const out = process.env.BENCH_CPU_PROFILE_OUT;
const session = new inspector.Session();
session.connect();
let running = false;

process.on('SIGUSR2', () => {
  if (!running) {
    running = true;
    session.post('Profiler.enable', () => session.post('Profiler.start'));
    return;
  }
  running = false;
  session.post('Profiler.stop', (err, result) => {
    if (err) {
      process.stderr.write(`cpu-profile-hook: ${err.message}\n`);
      return;
    }
    writeFileSync(out, JSON.stringify(result.profile));
    process.stdout.write('cpu-profile-written\n');
  });
});
