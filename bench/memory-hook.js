'use strict';
/**
 * Preloaded (`node -r bench/memory-hook.js ...`, e.g. through bench/export.js's
 * BENCH_SERVICE_NODE_ARGS) into a server to see where its memory goes during a download: every
 * BENCH_MEMORY_MS (50) ms one JSON line to BENCH_MEMORY_OUT (default /tmp/formwork-memory-<pid>.jsonl)
 * with the time, process.memoryUsage() (rss, heapTotal, heapUsed, external, arrayBuffers) and the
 * size of V8's new and old spaces, in bytes. Loads nothing else. Diagnosis only: not for production.
 */
const { appendFileSync, writeFileSync } = require('node:fs');
const v8 = require('node:v8');
const { isMainThread } = require('node:worker_threads');

// Preloads run in worker threads too (the webhook deliveries'): the main thread's memory only.
if (isMainThread) start();

function start() {
  const out = process.env.BENCH_MEMORY_OUT || `/tmp/formwork-memory-${process.pid}.jsonl`;
  const every = Number(process.env.BENCH_MEMORY_MS || 50);
  writeFileSync(out, '');
  const t0 = Date.now();
  // Collections so far, by kind (a line after a drop tells which kind freed it).
  const gcs = { minor: 0, major: 0 };
  const { PerformanceObserver, constants } = require('node:perf_hooks');
  new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) gcs.minor++;
      else if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) gcs.major++;
  }).observe({ entryTypes: ['gc'] });
  const spaces = () => {
    const s = {};
    for (const x of v8.getHeapSpaceStatistics()) s[x.space_name] = x.space_size;
    return s;
  };
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    const s = spaces();
    const line = {
      t: Date.now() - t0,
      rss: m.rss,
      heapTotal: m.heapTotal,
      heapUsed: m.heapUsed,
      external: m.external,
      arrayBuffers: m.arrayBuffers,
      newSpace: s.new_space,
      oldSpace: s.old_space,
      largeObject: s.large_object_space,
      minorGcs: gcs.minor,
      majorGcs: gcs.major,
    };
    appendFileSync(out, `${JSON.stringify(line)}\n`);
  }, every);
  timer.unref();

  // SIGUSR2: a heap snapshot next to BENCH_MEMORY_OUT (<out>.<n>.heapsnapshot), to see what holds the memory.
  let snapshots = 0;
  process.on('SIGUSR2', () => {
    const file = v8.writeHeapSnapshot(`${out}.${++snapshots}.heapsnapshot`);
    process.stderr.write(`memory-hook: wrote ${file}\n`);
  });
}
