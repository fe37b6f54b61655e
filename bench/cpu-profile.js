'use strict';
/**
 * Summarises a V8 .cpuprofile (as written by `node --cpu-prof`): self time per function and per
 * origin (an npm package, a Formwork source file, a node: module, or V8 itself), as percentages of
 * the time the process was not idle. Used by bench/get-form.js when BENCH_PROFILE=1; also runnable
 * on its own: `node bench/cpu-profile.js path/to/file.cpuprofile [top]`.
 */
const { readFileSync } = require('node:fs');

function origin(url, functionName) {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const src = url.indexOf('/dist/src/');
  if (src >= 0) return `formwork: ${url.slice(src + '/dist/'.length).replace(/\.js$/, '.ts')}`;
  if (url.startsWith('node:')) return url;
  return url.replace(/^file:\/\//, '');
}

function summarize(profile, top = 15) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    selfUs.set(id, (selfUs.get(id) || 0) + (profile.timeDeltas[i] || 0));
  }
  let total = 0;
  let idle = 0;
  const fns = new Map();
  const origins = new Map();
  for (const [id, us] of selfUs) {
    const { callFrame } = byId.get(id);
    const name = callFrame.functionName || '(anonymous)';
    if (name === '(idle)') {
      idle += us;
      continue;
    }
    total += us;
    const where = origin(callFrame.url, name);
    const fnKey = `${name} ${where}${callFrame.url ? `:${callFrame.lineNumber + 1}` : ''}`;
    fns.set(fnKey, (fns.get(fnKey) || 0) + us);
    origins.set(where, (origins.get(where) || 0) + us);
  }
  const rank = (m) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1000, pct: total ? (100 * us) / total : 0 }));
  return { busyMs: total / 1000, idleMs: idle / 1000, functions: rank(fns), origins: rank(origins) };
}

function toMarkdown(summary) {
  const lines = [];
  const busyPct = (100 * summary.busyMs) / (summary.busyMs + summary.idleMs || 1);
  lines.push(
    `Busy ${summary.busyMs.toFixed(0)} ms of ${(summary.busyMs + summary.idleMs).toFixed(0)} ms sampled (${busyPct.toFixed(0)}%); shares below are of busy time.`,
    '',
  );
  lines.push('| Self time by origin | % | ms |', '| --- | ---: | ---: |');
  for (const o of summary.origins) lines.push(`| ${o.name} | ${o.pct.toFixed(1)} | ${o.ms.toFixed(0)} |`);
  lines.push('', '| Self time by function | % | ms |', '| --- | ---: | ---: |');
  for (const f of summary.functions)
    lines.push(`| \`${f.name.replace(/\|/g, '\\|')}\` | ${f.pct.toFixed(1)} | ${f.ms.toFixed(0)} |`);
  return lines.join('\n');
}

module.exports = { summarize, toMarkdown };

if (require.main === module) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: node bench/cpu-profile.js FILE.cpuprofile [top]\n');
    process.exit(2);
  }
  process.stdout.write(`${toMarkdown(summarize(JSON.parse(readFileSync(file, 'utf8')), Number(top) || 15))}\n`);
}
