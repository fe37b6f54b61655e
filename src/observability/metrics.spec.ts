import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { registry } from './metrics';

const DOCS = join(__dirname, '..', '..', 'docs');

/** The metric names a PromQL expression reads (a histogram's _bucket/_sum/_count are its series). */
function metricsRead(expr: string): string[] {
  return [...expr.matchAll(/\b((?:formwork|process|nodejs)_[a-z0-9_]+)/g)].map((m) =>
    m[1].replace(/_(bucket|sum|count)$/, ''),
  );
}

describe('the metrics and their documents', () => {
  const registered = new Set(registry.getMetricsAsArray().map((m) => m.name));
  const ours = [...registered].filter((n) => n.startsWith('formwork_'));

  it('the Grafana dashboard reads only metrics the service has, and shows each of ours', () => {
    const dashboard = JSON.parse(readFileSync(join(DOCS, 'grafana-dashboard.json'), 'utf8')) as {
      panels: Array<{ targets: Array<{ expr: string }> }>;
    };
    const read = dashboard.panels.flatMap((p) => p.targets.flatMap((t) => metricsRead(t.expr)));
    expect(read.filter((name) => !registered.has(name))).toEqual([]);
    expect(ours.filter((name) => !read.includes(name))).toEqual([]);
  });

  it('docs/operating.md lists every metric of ours, and its alerts read only real ones', () => {
    const text = readFileSync(join(DOCS, 'operating.md'), 'utf8');
    expect(ours.filter((name) => !text.includes(`| \`${name}\` |`))).toEqual([]);
    const alerts = text.slice(
      text.indexOf('**Suggested alerts**'),
      text.indexOf('### Logs', text.indexOf('**Suggested alerts**')),
    );
    expect(metricsRead(alerts).filter((name) => !registered.has(name))).toEqual([]);
  });
});
