/**
 * The results pages (issue 27): the workspace's forms, and per form its summary, responses, one
 * response and how to share it. Components on the settings layout: every value is escaped by React.
 */
import type { ReactNode } from 'react';
import { esc } from '../common/html';
import type { FileAnswer } from '../files/file-answers';
import type { FormListItem } from '../forms/forms.repository';
import type { FormRecord } from '../forms/forms.service';
import type { ResponseStatus, ResponseView } from '../responses/responses.service';
import type { BlockSummary, FormSummary } from '../summaries/summarize';
import type { LimitCounts } from '../access/access.service';
import { Ctx } from '../settings/settings-http';
import { Field, FieldErrors, Hidden, Layout, Pager, PostForm, Select, Summary, Table, when } from '../settings/ui';
import { BlockChart, BlockCounts, FunnelChart, FunnelRow } from './charts';
import {
  ANY_OPS,
  choiceOf,
  FilterFields,
  filterQuery,
  Question,
  questionsOf,
  STATUS_LABELS,
  statusQuery,
} from './filter';
import { mayShow } from './results.service';

/** The copy buttons' script: a file of this origin (the CSP allows no inline script). */
export const RESULTS_SCRIPT_PATH = '/settings/assets/results.js';

/** Responses per page of the table. */
export const PER_PAGE = 50;

const STATUS_WORDS: Record<string, string> = { draft: 'Draft', published: 'Published', closed: 'Closed' };

/** Why a form that is not published shows no share link. */
const NOT_SHARED: Record<string, string> = {
  draft: 'None yet: publish the form to share it',
  closed: 'None: the form is closed',
};

/** An answer as text: choices by label, lists joined, yes/no in words, files by name. */
export function answerText(v: unknown): string {
  if (v === undefined || v === null) return '—';
  if (Array.isArray(v)) return v.map(answerText).join(', ');
  if (isFile(v)) return v.name;
  if (typeof v === 'boolean') return v ? 'Yes' : 'No';
  return String(v);
}

/** A file answer as reads show it (see src/files/file-answers.ts). */
function isFile(v: unknown): v is FileAnswer {
  return typeof v === 'object' && v !== null && typeof (v as FileAnswer).uploadId === 'string';
}

/** A size in words: 2.4 MB, 310 KB, 12 bytes. */
export function sizeText(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}

/** A file answer on a response's page: each file's name as a download link, with its size. */
function FilesAnswer({ files }: { files: FileAnswer[] }) {
  if (!files.length) return <>—</>;
  return (
    <ul style={{ margin: 0, paddingLeft: '1.2rem' }}>
      {files.map((f) => (
        <li key={f.uploadId}>
          {f.url ? (
            <a href={f.url} download={f.name}>
              {f.name}
            </a>
          ) : (
            f.name
          )}{' '}
          ({sizeText(f.size)})
        </li>
      ))}
    </ul>
  );
}

/**
 * A cell holding text for screen readers only: positioned, so that the hidden text (placed where
 * it would be) stays inside the table's scrolling region instead of widening the page on a phone.
 */
const HOLDS_HIDDEN = { position: 'relative' } as const;

/** A count as the pages write it: 1,234. */
const n = (x: number) => x.toLocaleString('en-US');

const clip = (s: string, n = 80) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** A link shown in a read-only field (selectable without JavaScript) and a Copy button the script reveals. */
export function CopyField(props: { id: string; label: string; value: string; rows?: number; hideLabel?: boolean }) {
  const control = props.rows ? (
    <textarea id={props.id} readOnly rows={props.rows} value={props.value} spellCheck={false} />
  ) : (
    <input id={props.id} type="text" readOnly value={props.value} spellCheck={false} />
  );
  return (
    <div className="field">
      <label htmlFor={props.id} className={props.hideLabel ? 'visually-hidden' : undefined}>
        {props.label}
      </label>
      <div style={{ display: 'flex', gap: '.5rem', alignItems: 'flex-start' }}>
        {control}
        <button type="button" className="secondary" data-copy-field={props.id} hidden>
          Copy <Hidden>{props.label}</Hidden>
        </button>
      </div>
    </div>
  );
}

/** The results pages' frame: the settings layout with the Forms section current, and the copy script. */
function ResultsLayout(props: { ctx: Ctx; title: string; children: ReactNode }) {
  return (
    <Layout title={props.title} chrome={{ ...props.ctx.chrome, current: 'forms' }}>
      {props.children}
      <script src={RESULTS_SCRIPT_PATH} defer />
    </Layout>
  );
}

export function FormsPage(props: {
  ctx: Ctx;
  forms: FormListItem[];
  total: number;
  page: number;
  publicUrl: string;
  perPage: number;
}) {
  const { ctx } = props;
  return (
    <ResultsLayout ctx={ctx} title="Forms">
      <h1>Forms</h1>
      {props.total === 0 ? (
        <p>No forms yet. Forms are made by the tools (create_form) or an agent connected over MCP.</p>
      ) : (
        <Table label="Forms" head={['Form', 'Status', 'Responses', 'Last response', 'Share link']}>
          {props.forms.map((f) => (
            <tr key={f.publicId}>
              <td style={HOLDS_HIDDEN}>
                <a href={`${ctx.base}/forms/${f.publicId}`}>{f.title}</a>
                {f.status === 'published' ? (
                  <>
                    <br />
                    <a href={`${props.publicUrl}/f/${f.publicId}`} className="desc">
                      Public page <Hidden>of {f.title}</Hidden>
                    </a>
                  </>
                ) : null}
              </td>
              <td>{STATUS_WORDS[f.status] ?? f.status}</td>
              <td>{f.responseCount.toLocaleString('en-US')}</td>
              <td>{when(f.lastResponseAt)}</td>
              <td style={HOLDS_HIDDEN} className="wide-cell">
                {/* Only a published form's link takes responses: the others would hand out a dead end. */}
                {f.status === 'published' ? (
                  <CopyField
                    id={`link-${f.publicId}`}
                    label={`Share link of ${f.title}`}
                    value={`${props.publicUrl}/f/${f.publicId}`}
                    hideLabel
                  />
                ) : (
                  <span className="muted">{NOT_SHARED[f.status]}</span>
                )}
              </td>
            </tr>
          ))}
        </Table>
      )}
      <Pager query={{}} page={props.page} more={props.page * props.perPage < props.total} />
    </ResultsLayout>
  );
}

type Tab = 'summary' | 'responses' | 'share' | 'settings';

/** A form's page: its title and status, the actions the person may take, and the tabs. */
function FormFrame(props: {
  ctx: Ctx;
  form: FormRecord;
  tab: Tab;
  title: string;
  /** The filter shown, which the Summary and Responses tabs keep. */
  query?: Record<string, string>;
  children: ReactNode;
}) {
  const { ctx, form } = props;
  const here = `${ctx.base}/forms/${form.publicId}`;
  const a = ctx.access;
  const q = props.query && Object.keys(props.query).length ? `?${new URLSearchParams(props.query)}` : '';
  const tabs: Array<[Tab, string, string]> = [
    ['summary', 'Summary', `${here}${q}`],
    ['responses', 'Responses', `${here}/responses${q}`],
    ['share', 'Share', `${here}/share`],
    ...(mayShow(a, 'update') ? [['settings', 'Settings', `${here}/settings`] as [Tab, string, string]] : []),
  ];
  const actions = [
    form.status !== 'published' && mayShow(a, 'publish') ? (
      <a key="publish" href={`${here}/publish`}>
        {form.status === 'closed' ? 'Reopen' : 'Publish'}
      </a>
    ) : null,
    form.status === 'published' && mayShow(a, 'close') ? (
      <a key="close" href={`${here}/close`}>
        Close form
      </a>
    ) : null,
    mayShow(a, 'deleteForm') ? (
      <a key="delete" href={`${here}/delete`}>
        Delete form
      </a>
    ) : null,
  ].filter(Boolean);
  return (
    <ResultsLayout ctx={ctx} title={`${props.title} · ${form.title}`}>
      <p className="desc">
        <a href={`${ctx.base}/forms`}>Forms</a> /
      </p>
      <h1 style={{ overflowWrap: 'anywhere' }}>{form.title}</h1>
      <p>
        <strong>{STATUS_WORDS[form.status] ?? form.status}</strong>
        {form.status === 'published'
          ? ' · taking responses'
          : form.status === 'closed'
            ? ' · not taking responses'
            : ''}
      </p>
      {actions.length ? (
        <nav aria-label="Form actions" className="actions" style={{ marginBottom: '1rem' }}>
          {actions}
        </nav>
      ) : null}
      <nav
        aria-label="Results"
        className="actions"
        style={{ borderBottom: '1px solid #d5d9e2', marginBottom: '1.5rem' }}
      >
        {tabs.map(([key, label, href]) => (
          <a
            key={key}
            href={href}
            aria-current={props.tab === key ? 'page' : undefined}
            style={{
              padding: '.4rem 0',
              borderBottom: `3px solid ${props.tab === key ? '#2b59c3' : 'transparent'}`,
              textDecoration: props.tab === key ? 'none' : undefined,
              color: props.tab === key ? '#1d2330' : undefined,
            }}
          >
            {label}
          </a>
        ))}
      </nav>
      {props.children}
    </ResultsLayout>
  );
}

/** What the Question field's script reads of each option: the conditions, and the choices of a select. */
const followed = (q: Pick<Question, 'ops' | 'choices' | 'kind'>) =>
  JSON.stringify({ ops: q.ops, choices: q.choices, input: q.kind === 'date' ? 'date' : 'text' });

/**
 * The filter of the Summary and Responses pages (a GET form to `action`): a question (a block or a
 * hidden field), the conditions it takes, a value (a select of its choices for choice questions
 * and yes/no), and days. Rendered for the question chosen; the page script (results.script.ts)
 * makes the condition and the value follow another choice at once, and without it the server
 * refuses a mismatch in words and shows the new question's conditions.
 */
function FilterForm(props: {
  action: string;
  form: FormRecord;
  fields: FilterFields;
  errors: FieldErrors;
  /** The Responses page's Status field (which responses it lists); absent on the Summary page. */
  status?: ResponseStatus;
}) {
  const { fields, errors } = props;
  const questions = questionsOf(props.form);
  const q = questions.find((x) => x.key === fields.block);
  const ops = q?.ops ?? ANY_OPS;
  const option = (x: Question) => (
    <option key={x.key} value={x.key} data-filter={followed(x)}>
      {clip(x.title, 60)}
    </option>
  );
  const blocks = questions.filter((x) => x.hidden === undefined);
  const hidden = questions.filter((x) => x.hidden !== undefined);
  const filtered = Object.keys(filterQuery(fields)).length > 0 || (props.status ?? 'completed') !== 'completed';
  return (
    <form method="get" action={props.action} aria-label="Filter responses" data-filter-form="">
      <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fit, minmax(11rem, 1fr))', gap: '0 1rem' }}>
        {props.status ? (
          <Field
            id="status"
            label="Show"
            errors={errors}
            control={(x) => (
              <Select {...x} options={Object.keys(STATUS_LABELS)} chosen={props.status} labels={STATUS_LABELS} />
            )}
          />
        ) : null}
        <Field
          id="block"
          label="Question"
          errors={errors}
          control={(x) => (
            <select {...x} defaultValue={fields.block}>
              <option value="" data-filter={followed({ ops: ANY_OPS, kind: 'text' })}>
                Any question
              </option>
              {hidden.length ? <optgroup label="Questions">{blocks.map(option)}</optgroup> : blocks.map(option)}
              {hidden.length ? <optgroup label="Hidden fields">{hidden.map(option)}</optgroup> : null}
            </select>
          )}
        />
        <Field
          id="op"
          label="Condition"
          errors={errors}
          control={(x) => (
            <Select {...x} options={ops.map(([op]) => op)} chosen={fields.op} labels={Object.fromEntries(ops)} />
          )}
        />
        <Field
          id="value"
          label="Value"
          errors={errors}
          control={(x) =>
            q?.choices ? (
              <Select
                {...x}
                options={q.choices.map(([v]) => v)}
                chosen={choiceOf(q, fields.value)}
                labels={Object.fromEntries(q.choices)}
              />
            ) : (
              <input type={q?.kind === 'date' ? 'date' : 'text'} {...x} defaultValue={fields.value} maxLength={500} />
            )
          }
        />
        <Field
          id="since"
          label="From (UTC)"
          errors={errors}
          control={(x) => <input type="date" {...x} defaultValue={fields.since} />}
        />
        <Field
          id="until"
          label="To (UTC, included)"
          errors={errors}
          control={(x) => <input type="date" {...x} defaultValue={fields.until} />}
        />
      </div>
      <div className="actions" style={{ marginBottom: '1.5rem' }}>
        <button type="submit" className="secondary">
          Filter
        </button>
        {filtered || Object.keys(errors).length ? <a href={props.action}>Clear the filter</a> : null}
      </div>
    </form>
  );
}

export function SummaryPage(props: {
  ctx: Ctx;
  form: FormRecord;
  fields: FilterFields;
  errors: FieldErrors;
  /** Absent under a refused filter; the cap's and quotas' counts on forms that have them (issue 47). */
  summary?: FormSummary & Partial<LimitCounts>;
  /** On a form that saves partial responses (or holds some): completed and in progress, and the drop-off by page. */
  progress?: { completed: number; partial: number; funnel: FunnelRow[] };
  /** The Responses tab's status, kept in its link (the summary counts completed responses). */
  status?: ResponseStatus;
}) {
  const { ctx, form, summary, errors, progress } = props;
  const query = filterQuery(props.fields);
  const filtered = Object.keys(query).length > 0;
  return (
    <FormFrame
      ctx={ctx}
      form={form}
      tab="summary"
      title="Summary"
      query={summary ? { ...query, ...statusQuery(props.status ?? 'completed') } : {}}
    >
      <h2>Summary</h2>
      {progress ? (
        <Progress {...progress} inProgressHref={`${ctx.base}/forms/${form.publicId}/responses?status=partial`} />
      ) : null}
      <Summary errors={errors} />
      <FilterForm action={`${ctx.base}/forms/${form.publicId}`} form={form} fields={props.fields} errors={errors} />
      {summary?.cap || summary?.quotas ? <Limits cap={summary.cap} quotas={summary.quotas} /> : null}
      {summary ? <SummaryBody summary={summary} filtered={filtered} /> : null}
    </FormFrame>
  );
}

/**
 * "12 completed · 3 in progress" and the drop-off by page (issue 36). The summary and filter below
 * cover completed responses only, as the tools do by default.
 */
function Progress(props: { completed: number; partial: number; funnel: FunnelRow[]; inProgressHref: string }) {
  return (
    <section aria-labelledby="progress-title" style={{ marginBottom: '1.5rem' }}>
      <p>
        <strong id="progress-title">
          {n(props.completed)} completed · {n(props.partial)} in progress
        </strong>
        {props.partial ? (
          <>
            {' '}
            · <a href={props.inProgressHref}>See who is in progress</a>
          </>
        ) : null}
      </p>
      {props.funnel.length > 1 && props.funnel[0].reached > 0 ? (
        <details open>
          <summary>Drop-off by page</summary>
          <p className="desc">How many people reached each page, and how many of them completed the form.</p>
          <FunnelChart rows={props.funnel} />
        </details>
      ) : null}
      <p className="desc">The summary below counts completed responses only.</p>
    </section>
  );
}

/** The form's cap and quotas (issue 47): each one's count and limit, whatever the filter. */
function Limits({ cap, quotas = [] }: Partial<LimitCounts>) {
  const rows = [...(cap ? [{ name: 'All responses (maxResponses)', ...cap }] : []), ...quotas];
  return (
    <section aria-labelledby="limits-title" style={{ marginBottom: '1.5rem' }}>
      <h3 id="limits-title">Limits</h3>
      <table>
        <thead>
          <tr>
            <th scope="col">Quota</th>
            <th scope="col">Count</th>
            <th scope="col">Limit</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.name}>
              <th scope="row">{r.name}</th>
              <td>{n(r.count)}</td>
              <td>
                {n(r.limit)}
                {r.count >= r.limit ? ' (full)' : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function SummaryBody({ summary, filtered }: { summary: FormSummary; filtered: boolean }) {
  return (
    <>
      <p role="status">
        {summary.total.toLocaleString('en-US')} {summary.total === 1 ? 'response' : 'responses'}
        {filtered ? (summary.total === 1 ? ' matches' : ' match') : ''}
        {summary.total ? (
          <>
            , from {when(summary.firstSubmittedAt)} to {when(summary.lastSubmittedAt)}
          </>
        ) : null}
        .
      </p>
      {summary.blocks.map((b, i) => (
        <section
          key={b.blockId}
          aria-labelledby={`q-${i}`}
          style={{ borderTop: '1px solid #e6e8ee', paddingTop: '1rem' }}
        >
          <h3 id={`q-${i}`} style={{ overflowWrap: 'anywhere' }}>
            {b.title}
          </h3>
          <BlockCounts b={b} total={summary.total} />
          <BlockChart b={b} />
        </section>
      ))}
      {computedBlocks(summary).map((b, i) => (
        <section
          key={b.blockId}
          aria-labelledby={`c-${i}`}
          style={{ borderTop: '1px solid #e6e8ee', paddingTop: '1rem' }}
        >
          <h3 id={`c-${i}`} style={{ overflowWrap: 'anywhere' }}>
            {b.title}
          </h3>
          <p className="desc">
            {b.answered.toLocaleString('en-US')} of {summary.total.toLocaleString('en-US')}
          </p>
          <BlockChart b={b} />
        </section>
      ))}
    </>
  );
}

/**
 * What the responses computed (issue 46), drawn as blocks are: the endings reached as a choice's
 * bars, a number variable as a number's range (with its distribution as a scale's columns), a
 * text variable's latest values.
 */
function computedBlocks(summary: FormSummary): BlockSummary[] {
  const endings = summary.endings ?? [];
  const reached = endings.reduce((n, e) => n + e.count, 0);
  return [
    ...(endings.length
      ? [
          {
            blockId: ':ending',
            type: 'ending',
            title: 'Endings reached',
            answered: reached,
            skipped: 0,
            choices: endings.map((e) => ({
              id: e.ref,
              label: e.title,
              count: e.count,
              share: reached ? e.count / reached : 0,
            })),
          },
        ]
      : []),
    ...(summary.variables ?? []).map((v) => ({
      ...v,
      blockId: `:variable:${v.name}`,
      title: `Variable ${v.name}`,
      skipped: 0,
    })),
  ];
}

/** Whether a response read is still in progress (a completed one carries status "completed", or none before issue 45). */
const isPartial = (r: ResponseView) => r.status === 'partial';

/** A response's status on the table: completed, or in progress with when it was last saved. */
function StatusCell({ r }: { r: ResponseView }) {
  if (!isPartial(r)) return <>Completed</>;
  return (
    <div style={{ minWidth: '8rem' }}>
      In progress
      <br />
      <span className="desc">saved {when(r.updatedAt)}</span>
    </div>
  );
}

/** "12 responses", "3 responses in progress", "15 responses, completed and in progress". */
function countText(total: number, status: ResponseStatus): string {
  const noun = total === 1 ? 'response' : 'responses';
  if (status === 'partial') return `${n(total)} ${noun} in progress`;
  if (status === 'all') return `${n(total)} ${noun}, completed and in progress`;
  return `${n(total)} ${noun}`;
}

/** The order the table shows, as list_responses' newest first reads each status. */
const ORDER_WORDS: Record<ResponseStatus, string> = {
  completed: 'newest first',
  partial: 'the last started first',
  all: 'those in progress first (the last started first), then the completed ones, newest first',
};

/** What the download takes without a filter. */
const DOWNLOAD_WORDS: Record<ResponseStatus, string> = {
  completed: 'Every completed response',
  partial: 'Every response in progress',
  all: 'Every response, completed and in progress (with a status column)',
};

/** The columns of the table: the first few questions and hidden fields (the full response is one click away). */
const TABLE_BLOCKS = 4;
const TABLE_HIDDEN = 3;

export function ResponsesPage(props: {
  ctx: Ctx;
  form: FormRecord;
  fields: FilterFields;
  /** Completed (default), in progress or both: list_responses' `status`. */
  status?: ResponseStatus;
  errors: FieldErrors;
  total: number;
  responses: ResponseView[];
  page: number;
}) {
  const { ctx, form, fields, errors } = props;
  const here = `${ctx.base}/forms/${form.publicId}`;
  const answerable = form.blocks.filter((b) => b.type !== 'statement' && b.type !== 'page_break');
  const shown = answerable.slice(0, TABLE_BLOCKS);
  const shownHidden = (form.hiddenFields ?? []).slice(0, TABLE_HIDDEN);
  const status = props.status ?? 'completed';
  const filter = filterQuery(fields);
  // The filter and the status, kept by the links (paging, the Summary tab, the download).
  const query = { ...filter, ...statusQuery(status) };
  const from = (props.page - 1) * PER_PAGE;
  const filtered = Object.keys(filter).length > 0;
  // Under a refused filter: its problems, and no count, table or download of something else.
  const refused = Object.keys(errors).length > 0;
  return (
    <FormFrame ctx={ctx} form={form} tab="responses" title="Responses" query={refused ? {} : query}>
      <h2>Responses</h2>
      <Summary errors={errors} />
      <FilterForm action={`${here}/responses`} form={form} fields={fields} errors={errors} status={status} />
      {refused ? null : (
        <>
          <p role="status">
            {countText(props.total, status)}
            {filtered ? (props.total === 1 ? ' matches' : ' match') : ''}
            {props.responses.length
              ? `; ${(from + 1).toLocaleString('en-US')} to ${(from + props.responses.length).toLocaleString('en-US')} shown, ${ORDER_WORDS[status]}`
              : ''}
            .
          </p>
          {props.responses.length ? (
            <Table
              label="Responses"
              head={['Submitted', 'Status', ...shown.map((b) => clip(b.title, 40)), ...shownHidden, '']}
            >
              {props.responses.map((r) => (
                <tr key={r.id}>
                  <td style={{ whiteSpace: 'nowrap' }}>{when(r.submittedAt)}</td>
                  <td>
                    <StatusCell r={r} />
                  </td>
                  {shown.map((b) => (
                    <td key={b.id}>
                      {/* A cell's own min-width is not kept by a table: a block inside it is. */}
                      <div style={{ minWidth: '8rem', overflowWrap: 'anywhere' }}>
                        {clip(answerText(r.answers[b.id]))}
                      </div>
                    </td>
                  ))}
                  {shownHidden.map((h) => (
                    <td key={`hidden:${h}`}>
                      <div style={{ minWidth: '6rem', overflowWrap: 'anywhere' }}>
                        {clip(answerText(r.hidden?.[h]))}
                      </div>
                    </td>
                  ))}
                  <td style={HOLDS_HIDDEN}>
                    <a href={`${here}/responses/${r.id}`}>
                      View{' '}
                      <Hidden>
                        {isPartial(r)
                          ? `the response in progress saved ${when(r.updatedAt)}`
                          : `the response of ${when(r.submittedAt)}`}
                      </Hidden>
                    </a>
                  </td>
                </tr>
              ))}
            </Table>
          ) : null}
          <Pager query={query} page={props.page} more={from + PER_PAGE < props.total} />
          <h3>Download</h3>
          <p>
            {filtered ? 'The responses this filter shows' : DOWNLOAD_WORDS[status]}, oldest first, as CSV (spreadsheets)
            or NDJSON (one JSON response per line). The link made serves 15 minutes.
          </p>
          <PostForm action={`${here}/download`} csrf={ctx.chrome.csrf} hidden={query}>
            <div className="actions">
              <button type="submit" name="format" value="csv">
                Download CSV
              </button>
              <button type="submit" name="format" value="ndjson" className="secondary">
                Download NDJSON
              </button>
            </div>
          </PostForm>
        </>
      )}
    </FormFrame>
  );
}

export function ResponsePage({ ctx, form, response }: { ctx: Ctx; form: FormRecord; response: ResponseView }) {
  const here = `${ctx.base}/forms/${form.publicId}`;
  const answerable = form.blocks.filter((b) => b.type !== 'statement' && b.type !== 'page_break');
  // The form's hidden fields (— where none was given), then any the form no longer declares.
  const given = response.hidden ?? {};
  const names = [...new Set([...(form.hiddenFields ?? []), ...Object.keys(given)])];
  const hidden = names.map((k): [string, string] => [k, answerText(given[k])]);
  return (
    <FormFrame ctx={ctx} form={form} tab="responses" title="Response">
      {isPartial(response) ? (
        <h2>
          Response in progress, started {when(response.startedAt)}, saved {when(response.updatedAt)}
        </h2>
      ) : (
        <h2>Response of {when(response.submittedAt)}</h2>
      )}
      <p className="desc">
        Id <code>{response.id}</code>
      </p>
      <dl>
        {answerable.map((b) => (
          <div key={b.id} style={{ marginBottom: '1rem' }}>
            <dt style={{ fontWeight: 600, overflowWrap: 'anywhere' }}>{b.title}</dt>
            <dd style={{ margin: 0, whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
              {b.type === 'file_upload' && Array.isArray(response.answers[b.id]) ? (
                <FilesAnswer files={(response.answers[b.id] as unknown[]).filter(isFile)} />
              ) : (
                answerText(response.answers[b.id])
              )}
            </dd>
          </div>
        ))}
      </dl>
      {hidden.length ? (
        <>
          <h3>Hidden fields</h3>
          <dl>
            {hidden.map(([k, v]) => (
              <div key={k}>
                <dt style={{ fontWeight: 600 }}>{k}</dt>
                <dd style={{ margin: 0, overflowWrap: 'anywhere' }}>{v}</dd>
              </div>
            ))}
          </dl>
        </>
      ) : null}
      <div className="actions">
        <a href={`${here}/responses`}>Back to the responses</a>
        {mayShow(ctx.access, 'deleteResponse') ? (
          <a href={`${here}/responses/${response.id}/delete`}>Delete this response</a>
        ) : null}
      </div>
    </FormFrame>
  );
}

export function SharePage(props: { ctx: Ctx; form: FormRecord; publicUrl: string; values: Record<string, string> }) {
  const { ctx, form } = props;
  const here = `${ctx.base}/forms/${form.publicId}`;
  const hiddenFields = form.hiddenFields ?? [];
  const q = new URLSearchParams(hiddenFields.map((h) => [h, props.values[h] ?? ''])).toString();
  const link = `${props.publicUrl}/f/${form.publicId}${q ? `?${q}` : ''}`;
  const origins = ctx.access.workspace.embedOrigins;
  // A snippet for another site's HTML: its attribute values escaped for it (the page escapes it again, as text).
  const snippet = `<iframe src="${esc(link)}" title="${esc(form.title)}" width="100%" height="640" style="border:0" loading="lazy"></iframe>`;
  if (form.status !== 'published')
    // No link to hand out: the form's page would only tell people it takes no responses.
    return (
      <FormFrame ctx={ctx} form={form} tab="share" title="Share">
        <h2>Share</h2>
        <p className="notice" role="note">
          This form is {form.status === 'draft' ? 'a draft' : 'closed'}: it takes no responses, so it has no link to
          share or embed yet.{' '}
          {mayShow(ctx.access, 'publish') ? (
            <a href={`${here}/publish`}>{form.status === 'draft' ? 'Publish it' : 'Reopen it'}</a>
          ) : (
            `An editor can ${form.status === 'draft' ? 'publish' : 'reopen'} it.`
          )}
        </p>
      </FormFrame>
    );
  return (
    <FormFrame ctx={ctx} form={form} tab="share" title="Share">
      <h2>Share</h2>
      <CopyField id="public-link" label="Public link" value={link} />
      {hiddenFields.length ? (
        <form method="get" action={`${here}/share`} aria-labelledby="hidden-title">
          <h3 id="hidden-title">Hidden fields</h3>
          <p>
            This form keeps {hiddenFields.length === 1 ? 'a hidden field' : 'hidden fields'} from its link&apos;s query,
            stored with each response (where someone came from, say). Fill {hiddenFields.length === 1 ? 'it' : 'them'}{' '}
            in for the link above.
          </p>
          {hiddenFields.map((h) => (
            <Field
              key={h}
              id={`h-${h}`}
              label={h}
              errors={{}}
              control={(x) => (
                <input type="text" {...x} name={h} defaultValue={props.values[h] ?? ''} maxLength={500} />
              )}
            />
          ))}
          <button type="submit" className="secondary">
            Update the link
          </button>
        </form>
      ) : null}
      <h3>Embed</h3>
      {origins.length ? (
        <p>
          Paste this into a page of {origins.length === 1 ? 'this site' : 'one of these sites'}, which the workspace
          allows to show its forms in a frame: {origins.join(', ')}.
        </p>
      ) : (
        <p>
          No site may show this workspace&apos;s forms in a frame yet: the form&apos;s page refuses to be framed until
          an owner lists your site&apos;s origin under Plan and embedding. The snippet below then works there.
        </p>
      )}
      <CopyField id="embed" label="Embed snippet" value={snippet} rows={3} />
    </FormFrame>
  );
}

/** The settings page's fields as posted (or as stored): text, as the person typed it. */
export interface SettingsValues {
  opensAt: string;
  closesAt: string;
  maxResponses: string;
  access: string;
  spamProtection: string;
}

const ACCESS_LABELS = { public: 'Anyone with the link', invite: 'Only people with an invite link' };
const SPAM_LABELS = {
  auto: 'Automatic (challenge when busy)',
  always: 'Always (challenge every time)',
  off: 'Off',
};

/**
 * Who may answer, how many and when (issue 47), editable by editors: the same rules as update_form
 * (its refusals shown beside their fields). Quotas are shown, and changed with update_form.
 */
export function SettingsPage(props: { ctx: Ctx; form: FormRecord; values: SettingsValues; errors: FieldErrors }) {
  const { ctx, form, values, errors } = props;
  const here = `${ctx.base}/forms/${form.publicId}`;
  const quotas = form.quotas ?? [];
  const time = 'A date and time in UTC, as 2030-01-31 09:00 (or ISO 8601 with its zone). Empty: none.';
  return (
    <FormFrame ctx={ctx} form={form} tab="settings" title="Settings">
      <h2>Who may answer, how many and when</h2>
      <Summary errors={errors} />
      <PostForm action={`${here}/settings`} csrf={ctx.chrome.csrf} hidden={{ version: String(form.version) }}>
        <Field
          id="opensAt"
          label="Opens at"
          hint={`${time} Before then, the form's page says when it opens.`}
          errors={errors}
          control={(x) => <input type="text" {...x} defaultValue={values.opensAt} maxLength={40} />}
        />
        <Field
          id="closesAt"
          label="Closes at"
          hint={`${time} Then it closes, and its page says so.`}
          errors={errors}
          control={(x) => <input type="text" {...x} defaultValue={values.closesAt} maxLength={40} />}
        />
        <Field
          id="maxResponses"
          label="Most responses"
          hint="The form takes at most this many, then shows its full page. Empty: no limit."
          errors={errors}
          control={(x) => <input type="number" min={1} {...x} defaultValue={values.maxResponses} />}
        />
        <div className="field">
          <label className="option" htmlFor="closeNow" style={{ fontWeight: 400, display: 'flex', gap: '.5rem' }}>
            <input type="checkbox" id="closeNow" name="closeNow" value="1" />
            If the form already has more responses than that, keep the limit and close it now
          </label>
        </div>
        <Field
          id="access"
          label="Who may answer"
          errors={errors}
          control={(x) => (
            <Select {...x} options={['public', 'invite']} chosen={values.access} labels={ACCESS_LABELS} />
          )}
        />
        <Field
          id="spamProtection"
          label="Spam protection"
          errors={errors}
          control={(x) => (
            <Select {...x} options={['auto', 'always', 'off']} chosen={values.spamProtection} labels={SPAM_LABELS} />
          )}
        />
        <button type="submit">Save settings</button>
      </PostForm>
      <h3>Quotas</h3>
      {quotas.length ? (
        <ul>
          {quotas.map((q) => (
            <li key={q.name}>
              {q.name}: at most {q.limit}
              {q.onFull && q.onFull !== 'end' ? `, then ${q.onFull}` : ''}
            </li>
          ))}
        </ul>
      ) : (
        <p>None.</p>
      )}
      <p className="desc">
        Quotas are set with the <code>update_form</code> tool (its <code>quotas</code>); their counts are on the
        Summary.
      </p>
    </FormFrame>
  );
}
