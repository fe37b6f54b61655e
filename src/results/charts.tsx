/**
 * The summary's charts, drawn on the server as SVG from one block's summary (summarize_responses):
 * bars for choices and yes/no, a column per value for rating and linear scale, a range with its
 * mean for numbers, the latest answers for text. Each chart is a picture for the eye (aria-hidden);
 * a visually hidden table beside it carries the same numbers for screen readers.
 */
import type { ReactNode } from 'react';
import type { BlockSummary } from '../summaries/summarize';
import { Hidden, Table, when } from '../settings/ui';

const BAR = '#2b59c3';
const TRACK = '#e6e8ee';
const INK = '#1d2330';

const percent = (n: number, of: number) => (of ? Math.round((n / of) * 1000) / 10 : 0);
const fmt = (n: number | string | null | undefined) =>
  n === null || n === undefined ? '—' : typeof n === 'number' ? n.toLocaleString('en-US') : n;

/** The rows a chart shows: a label, a count, its share of the answers. */
interface Row {
  label: string;
  count: number;
}

/** Horizontal bars, one per row: the label and "count · share" above a bar of the share. */
function Bars({ rows, of }: { rows: Row[]; of: number }) {
  return (
    <div aria-hidden="true">
      {rows.map((r, i) => {
        const p = percent(r.count, of);
        return (
          <div key={i} style={{ marginBottom: '.5rem' }}>
            <div style={{ display: 'flex', justifyContent: 'space-between', gap: '1rem' }}>
              <span style={{ overflowWrap: 'anywhere' }}>{r.label}</span>
              <span style={{ whiteSpace: 'nowrap' }}>
                {fmt(r.count)} · {p}%
              </span>
            </div>
            <svg width="100%" height="14" viewBox="0 0 100 14" preserveAspectRatio="none" focusable="false">
              <rect x="0" y="2" width="100" height="10" rx="2" fill={TRACK} />
              <rect x="0" y="2" width={p} height="10" rx="2" fill={BAR} />
            </svg>
          </div>
        );
      })}
    </div>
  );
}

/** One column per value of a scale, the count above each, the value below. */
function Columns({ rows }: { rows: Row[] }) {
  const w = 44;
  const h = 120;
  const top = Math.max(1, ...rows.map((r) => r.count));
  return (
    <svg
      aria-hidden="true"
      focusable="false"
      viewBox={`0 0 ${rows.length * w} ${h + 40}`}
      width="100%"
      style={{ maxWidth: `${rows.length * 4}rem`, display: 'block' }}
    >
      {rows.map((r, i) => {
        const bh = Math.round((r.count / top) * h);
        const x = i * w;
        return (
          <g key={i}>
            <rect x={x + 6} y={16 + h - bh} width={w - 12} height={Math.max(bh, 1)} rx="2" fill={bh ? BAR : TRACK} />
            <text x={x + w / 2} y={12 + h - bh} textAnchor="middle" fontSize="12" fill={INK}>
              {fmt(r.count)}
            </text>
            <text x={x + w / 2} y={h + 34} textAnchor="middle" fontSize="14" fill={INK}>
              {r.label}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

/** Min to max on a line, the mean marked. */
function Range({ min, max, mean }: { min: number; max: number; mean: number }) {
  const span = max - min || 1;
  const at = 10 + ((mean - min) / span) * 280;
  return (
    <svg aria-hidden="true" focusable="false" viewBox="0 0 300 24" width="100%" style={{ maxWidth: '24rem' }}>
      <line x1="10" y1="12" x2="290" y2="12" stroke={TRACK} strokeWidth="6" strokeLinecap="round" />
      <circle cx={at} cy="12" r="7" fill={BAR} />
    </svg>
  );
}

/** The same numbers as a table, for screen readers. */
function NumbersTable({ caption, head, rows }: { caption: string; head: string[]; rows: ReactNode[][] }) {
  return (
    // Hidden by its wrapper: a table is never narrower than its content, whatever its width says.
    <div className="visually-hidden">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {head.map((h) => (
              <th key={h} scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i}>
              <th scope="row">{r[0]}</th>
              {r.slice(1).map((c, j) => (
                <td key={j}>{c}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function CountsChart({ b, rows }: { b: BlockSummary; rows: Row[] }) {
  return (
    <>
      <Bars rows={rows} of={b.answered} />
      <NumbersTable
        caption={`Answers to ${b.title}`}
        head={['Answer', 'Count', 'Share of answers']}
        rows={rows.map((r) => [r.label, fmt(r.count), `${percent(r.count, b.answered)}%`])}
      />
    </>
  );
}

/** The chart of one block's summary (nothing to draw for a block no one answered). */
export function BlockChart({ b }: { b: BlockSummary }) {
  if (b.choices) return <CountsChart b={b} rows={b.choices.map((c) => ({ label: c.label, count: c.count }))} />;
  if (b.yes !== undefined || b.no !== undefined)
    return (
      <CountsChart
        b={b}
        rows={[
          { label: 'Yes', count: b.yes ?? 0 },
          { label: 'No', count: b.no ?? 0 },
        ]}
      />
    );
  const stats = (
    <p>
      Lowest {fmt(b.min)} · mean {fmt(b.mean)} · highest {fmt(b.max)}
    </p>
  );
  if (b.distribution) {
    const rows = b.distribution.map((d) => ({ label: String(d.value), count: d.count }));
    return (
      <>
        <Columns rows={rows} />
        {stats}
        <NumbersTable
          caption={`Answers to ${b.title} per value`}
          head={['Value', 'Count', 'Share of answers']}
          rows={rows.map((r) => [r.label, fmt(r.count), `${percent(r.count, b.answered)}%`])}
        />
      </>
    );
  }
  if (b.mean !== undefined)
    return (
      <>
        {typeof b.min === 'number' && typeof b.max === 'number' && typeof b.mean === 'number' ? (
          <Range min={b.min} max={b.max} mean={b.mean} />
        ) : null}
        {stats}
      </>
    );
  if (b.latest)
    return b.latest.length ? (
      <>
        <h4>Latest answers</h4>
        <ol className="latest">
          {b.latest.map((l, i) => (
            <li key={i}>
              <span style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>{l.value}</span>{' '}
              <span className="desc">{when(l.submittedAt)}</span>
            </li>
          ))}
        </ol>
      </>
    ) : null;
  if (b.min !== undefined)
    return (
      <p>
        Earliest {fmt(b.min)} · latest {fmt(b.max)}
      </p>
    );
  return null;
}

/** A block's counts: answered, and on forms that branch shown and skipped. */
export function BlockCounts({ b, total }: { b: BlockSummary; total: number }) {
  return (
    <p className="desc">
      {fmt(b.answered)} answered
      {b.shown !== undefined ? (
        <>
          {' '}
          of {fmt(b.shown)} shown <Hidden>this question</Hidden>
        </>
      ) : (
        <> of {fmt(total)}</>
      )}{' '}
      · {fmt(b.skipped)} skipped
    </p>
  );
}

/** One page of the drop-off funnel (PartialResponsesService.funnel). */
export interface FunnelRow {
  page: string;
  title?: string;
  reached: number;
  completed: number;
}

/**
 * Drop-off (issue 36): per page, a bar of the responses that reached it (its share of those that
 * started) with the completed part darker, then a table of the same numbers, shown (a person on
 * a phone or a screen reader reads the table; the bars are for the eye).
 */
export function FunnelChart({ rows }: { rows: FunnelRow[] }) {
  const started = rows[0]?.reached ?? 0;
  const name = (r: FunnelRow, i: number) => r.title ?? (i === 0 ? 'First page' : `Page ${i + 1}`);
  return (
    <>
      <div aria-hidden="true">
        {rows.map((r, i) => (
          <div key={r.page} style={{ marginBottom: '.5rem' }}>
            <div style={{ display: 'flex', justifyContent: 'space-between', gap: '1rem' }}>
              <span style={{ overflowWrap: 'anywhere' }}>
                {i + 1}. {name(r, i)}
              </span>
              <span style={{ whiteSpace: 'nowrap' }}>
                {fmt(r.reached)} · {percent(r.reached, started)}%
              </span>
            </div>
            <svg width="100%" height="14" viewBox="0 0 100 14" preserveAspectRatio="none" focusable="false">
              <rect x="0" y="2" width="100" height="10" rx="2" fill={TRACK} />
              <rect x="0" y="2" width={percent(r.reached, started)} height="10" rx="2" fill="#8fa7e0" />
              <rect x="0" y="2" width={percent(r.completed, started)} height="10" rx="2" fill={BAR} />
            </svg>
          </div>
        ))}
        <p className="desc">
          <span style={{ color: BAR }}>■</span> completed · <span style={{ color: '#8fa7e0' }}>■</span> not (yet)
          completed
        </p>
      </div>
      <Table label="Drop-off by page" head={['Page', 'Reached', 'Share of those who started', 'Completed']}>
        {rows.map((r, i) => (
          <tr key={r.page}>
            <td style={{ overflowWrap: 'anywhere' }}>
              {i + 1}. {name(r, i)}
            </td>
            <td>{fmt(r.reached)}</td>
            <td>{percent(r.reached, started)}%</td>
            <td>{fmt(r.completed)}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}
