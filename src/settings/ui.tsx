import type { ReactNode } from 'react';
import { Document, renderPage } from '../common/html';
import type { Access } from './settings.service';

/**
 * What every settings page shares, once: the layout (top bar with the workspace's sections), the
 * CSRF field, fields with their errors, the confirmation step before a destructive action, the
 * notice after a change, and a one-time secret with its Copy button. Components: values are
 * escaped by React; nothing here is raw HTML.
 */

export const SCRIPT_PATH = '/settings/assets/settings.js';

/** Errors by field name (the field's id), shown next to the field and in the summary. */
export type FieldErrors = Record<string, string>;

/** The signed-in person's frame around a page: who, the CSRF token, the workspace, the section shown, a notice. */
export interface Chrome {
  email: string;
  csrf: string;
  access?: Access;
  current?: string;
  /** The success notice of the change just made (a fixed text, see notices.ts). */
  notice?: string;
}

export const when = (d: Date | string | null | undefined) =>
  d ? new Date(d).toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : '—';

export const render = renderPage;

/** The columns a table's cards name on a phone (see Table); a column past these shows no name there. */
const TABLE_COLUMNS = 16;

/** The settings pages' own rules, after the shared ones of html.tsx. */
const SETTINGS_STYLE = `
  header.top { background: #fff; border-bottom: 1px solid #d5d9e2; }
  header.top .bar, nav.sections { max-width: 68rem; margin: 0 auto; padding: .6rem 2rem; box-sizing: border-box; }
  header.top .bar { display: flex; flex-wrap: wrap; align-items: center; gap: .25rem 1rem; }
  header.top .where { display: flex; flex-wrap: wrap; align-items: baseline; gap: .5rem; min-width: 0; }
  header.top .sep { color: #6b7385; } header.top .ws { overflow-wrap: anywhere; }
  header.top .me { margin-left: auto; display: flex; flex-wrap: wrap; align-items: center; gap: .25rem 1rem; }
  header.top .who { color: #4a5263; overflow-wrap: anywhere; } header.top button { padding: .3rem .9rem; }
  nav.sections { display: flex; flex-wrap: wrap; gap: 0 1.25rem; padding-top: 0; padding-bottom: 0; }
  nav.sections a { padding: .45rem 0; text-decoration: none; border-bottom: 3px solid transparent; }
  nav.sections a[aria-current=page], header.top a[aria-current=page] { color: #1d2330; border-bottom-color: #2b59c3; font-weight: 400; text-decoration: none; }
  code { word-break: normal; overflow-wrap: anywhere; } code.prefix { white-space: nowrap; overflow-wrap: normal; }
  .secret { word-break: break-all; } .label-space { display: block; margin-bottom: .25rem; }
  .scroll { overflow-x: auto; margin-bottom: 1.5rem; position: relative; } .scroll table { margin-bottom: 0; }
  .scroll:focus { outline: 3px solid #2b59c3; outline-offset: 2px; }
  td .row-actions { display: flex; flex-wrap: wrap; gap: .25rem .75rem; align-items: center; }
  .scroll .wide-cell { min-width: 16rem; } h1, h2, h3 { overflow-wrap: break-word; }
  @media (max-width: 640px) {
    main, main.wide { margin: 0; padding: 1rem; border-radius: 0; }
    header.top .bar, nav.sections { padding-left: 1rem; padding-right: 1rem; }
    /* A table's rows become cards: each cell on its own line, its column's name beside it (see Table). */
    .scroll table, .scroll tbody, .scroll tr, .scroll td { display: block; }
    .scroll thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
    .scroll tr { border: 1px solid #d5d9e2; border-radius: 6px; padding: .4rem .75rem; margin-bottom: .75rem; }
    .scroll td { display: flow-root; border: 0; padding: .2rem 0 .2rem 7.5rem; overflow-wrap: anywhere; }
    .scroll td::before { float: left; width: 7rem; margin-left: -7.5rem; font-weight: 600; color: #4a5263; }
    .scroll .wide-cell { min-width: 0; } .scroll td button { overflow-wrap: normal; flex: none; }
${Array.from({ length: TABLE_COLUMNS }, (_, i) => `    .scroll td:nth-child(${i + 1})::before { content: var(--c${i + 1}); }`).join('\n')}
  }`;

/** A settings page for someone not signed in (sign-in, set password, a refusal). */
export function Bare(props: { title: string; children: ReactNode }) {
  return (
    <Document title={props.title} style={SETTINGS_STYLE}>
      <main>{props.children}</main>
    </Document>
  );
}

export const CsrfField = ({ csrf }: { csrf: string }) => <input type="hidden" name="csrf" value={csrf} />;

/** A form that posts here with the session's CSRF token (and `hidden` fields). */
export function PostForm(props: {
  action: string;
  csrf: string;
  className?: string;
  hidden?: Record<string, string>;
  children: ReactNode;
}) {
  return (
    <form method="post" action={props.action} className={props.className}>
      <CsrfField csrf={props.csrf} />
      {Object.entries(props.hidden ?? {}).map(([name, value]) => (
        <input key={name} type="hidden" name={name} value={value} />
      ))}
      {props.children}
    </form>
  );
}

const sectionLinks: Array<[key: string, label: string, adminOnly: boolean | 'owner']> = [
  ['forms', 'Forms', false],
  ['tokens', 'API tokens', true],
  ['members', 'Members', true],
  ['apps', 'Connected apps', false],
  ['webhooks', 'Webhooks', true],
  ['email', 'Email', false],
  ['audit', 'Audit log', true],
  ['plan', 'Plan and embedding', 'owner'],
];

/**
 * The top bar: where you are (Workspaces / the workspace) and who you are (Account, Sign out) on
 * one row, the workspace's sections the role may see on their own row below, the one shown
 * underlined.
 */
function TopBar({ chrome }: { chrome: Chrome }) {
  const a = chrome.access;
  const here = (key: string) => (chrome.current === key ? ('page' as const) : undefined);
  const admin = a?.role === 'admin' || a?.role === 'owner';
  const sections = sectionLinks.filter(([, , who]) => (who === 'owner' ? a?.role === 'owner' : !who || admin));
  return (
    <header className="top">
      <div className="bar">
        <div className="where">
          <a href="/settings" aria-current={here('home')}>
            Workspaces
          </a>
          {a ? (
            <>
              <span className="sep" aria-hidden="true">
                /
              </span>
              <span className="ws">{a.workspace.name}</span>
            </>
          ) : null}
        </div>
        <div className="me">
          <span className="who">{chrome.email}</span>
          <a href="/settings/account" aria-current={here('account')}>
            Account
          </a>
          <PostForm action="/settings/sign-out" csrf={chrome.csrf} className="inline">
            <button type="submit" className="secondary">
              Sign out
            </button>
          </PostForm>
        </div>
      </div>
      {a ? (
        <nav className="sections" aria-label="Workspace settings">
          {sections.map(([key, label]) => (
            <a key={key} href={`/settings/w/${a.workspace.slug}/${key}`} aria-current={here(key)}>
              {label}
            </a>
          ))}
        </nav>
      ) : null}
    </header>
  );
}

/** Every signed-in page: the top bar, then the page, the notice of the change just made first. */
export function Layout(props: { title: string; chrome: Chrome; children: ReactNode }) {
  return (
    <Document title={`${props.title} · Formwork settings`} script={SCRIPT_PATH} style={SETTINGS_STYLE}>
      <TopBar chrome={props.chrome} />
      <main className="wide">
        <Notice text={props.chrome.notice} />
        {props.children}
      </main>
    </Document>
  );
}

export const Notice = ({ text }: { text?: string }) =>
  text ? (
    <p className="notice" role="status">
      {text}
    </p>
  ) : null;

export function Summary({ errors }: { errors: FieldErrors }) {
  const entries = Object.entries(errors);
  if (!entries.length) return null;
  return (
    <div className="summary" role="alert" aria-labelledby="summary-title" tabIndex={-1} autoFocus id="errors">
      <h2 id="summary-title">{entries.length === 1 ? 'There is a problem' : `There are ${entries.length} problems`}</h2>
      <ul>
        {entries.map(([field, message]) => (
          <li key={field}>
            <a href={`#${field}`}>{message}</a>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** The attributes a field's control takes: its id and name, what describes it, whether it is invalid. */
export interface ControlProps {
  id: string;
  name: string;
  'aria-describedby'?: string;
  'aria-invalid'?: true;
}

/** A labelled field with its hint and its error beside it. */
export function Field(props: {
  id: string;
  label: string;
  errors: FieldErrors;
  hint?: string;
  control: (attrs: ControlProps) => ReactNode;
}) {
  const { id, hint } = props;
  const error = props.errors[id];
  const described = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {hint ? (
        <p className="desc" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
      <FieldError id={id} error={error} />
      {props.control({
        id,
        name: id,
        'aria-describedby': described || undefined,
        'aria-invalid': error ? true : undefined,
      })}
    </div>
  );
}

const FieldError = ({ id, error }: { id: string; error?: string }) =>
  error ? (
    <p className="error" id={`${id}-error`}>
      {error}
    </p>
  ) : null;

/** Checkboxes of one name in a fieldset (scopes, events), with the fieldset's error. */
export function Checkboxes(props: {
  id: string;
  legend: string;
  options: readonly string[];
  chosen: string[];
  errors: FieldErrors;
}) {
  const error = props.errors[props.id];
  return (
    <fieldset className="field" id={props.id} aria-describedby={error ? `${props.id}-error` : undefined}>
      <legend>{props.legend}</legend>
      <FieldError id={props.id} error={error} />
      {props.options.map((o) => (
        <label key={o}>
          <input type="checkbox" name={props.id} value={o} defaultChecked={props.chosen.includes(o)} /> {o}
        </label>
      ))}
    </fieldset>
  );
}

export function Select(
  props: ControlProps & { options: readonly string[]; chosen?: string; labels?: Record<string, string> },
) {
  const { options, chosen, labels, ...attrs } = props;
  return (
    <select {...attrs} defaultValue={chosen}>
      {options.map((o) => (
        <option key={o} value={o}>
          {labels?.[o] ?? o}
        </option>
      ))}
    </select>
  );
}

/** Text as a CSS string: quotes, backslashes and control characters escaped. */
const cssString = (s: string) =>
  `"${[...s].map((c) => (c < ' ' || c === '\u007f' ? `\\${c.charCodeAt(0).toString(16)} ` : c === '"' || c === '\\' ? `\\${c}` : c)).join('')}"`;

/**
 * A table; on a phone (SETTINGS_STYLE) each row is a card, a cell a line with its column's name
 * beside it. The names reach the cells' ::before as custom properties of the table (--c1, --c2,
 * ...), so rows rendered anywhere (a row component, a column added later) get them with no
 * attribute per cell. The header row stays for screen readers.
 */
export function Table(props: { label: string; head: string[]; children: ReactNode }) {
  const names = Object.fromEntries(props.head.map((h, i) => [`--c${i + 1}`, cssString(h)]));
  return (
    <div className="scroll" role="region" aria-label={props.label} tabIndex={0}>
      <table style={names}>
        <thead>
          <tr>
            {props.head.map((h, i) =>
              h ? (
                <th key={i}>{h}</th>
              ) : (
                <th key={i}>
                  <span className="visually-hidden">Actions</span>
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** Text read by screen readers only, e.g. which row a button acts on. */
export const Hidden = ({ children }: { children: ReactNode }) => <span className="visually-hidden">{children}</span>;

/** The confirmation step of a destructive action: the question, one button that posts, Cancel. */
export function ConfirmPage(props: {
  chrome: Chrome;
  title: string;
  question: string;
  action: string;
  button: string;
  back: string;
  hidden?: Record<string, string>;
}) {
  return (
    <Layout title={props.title} chrome={props.chrome}>
      <h1>{props.title}</h1>
      <p>{props.question}</p>
      <div className="actions">
        <PostForm action={props.action} csrf={props.chrome.csrf} className="inline" hidden={props.hidden}>
          <button type="submit" className="danger">
            {props.button}
          </button>
        </PostForm>
        <a href={props.back} className="cancel">
          Cancel
        </a>
      </div>
    </Layout>
  );
}

/** The flash of a page that shows a secret once (see SettingsHttp.showFlash). */
export type Flash = Record<string, unknown> | undefined;

/** What a page showing a secret once says: its section, titles, the secret, why it is gone. */
export interface OnceShownText {
  section: string;
  title: (flash: Record<string, unknown>) => string;
  intro: (flash: Record<string, unknown>) => ReactNode;
  secret: string;
  /** After the secret (e.g. the old secret's overlap). */
  more?: (flash: Record<string, unknown>) => ReactNode;
  gone: [title: string, text: string];
  back: string;
}

/** A secret shown once (a token, a set-password link, a signing secret), or why it is gone. */
export function OnceShown({
  chrome,
  base,
  flash,
  text,
}: {
  chrome: Chrome;
  base: string;
  flash: Flash;
  text: OnceShownText;
}) {
  const [goneTitle, gone] = text.gone;
  return (
    <Layout title={flash ? text.title(flash) : goneTitle} chrome={{ ...chrome, current: text.section }}>
      {flash ? (
        <>
          <h1>{text.title(flash)}</h1>
          <div className="notice" role="status">
            <p>{text.intro(flash)}</p>
            <code className="secret" id="secret">
              {String(flash[text.secret] ?? '')}
            </code>
            <button type="button" className="secondary" data-copy="secret" hidden>
              Copy
            </button>
            {text.more?.(flash)}
          </div>
        </>
      ) : (
        <>
          <h1>{goneTitle}</h1>
          <p>{gone}</p>
        </>
      )}
      <p>
        <a href={`${base}/${text.section}`}>{text.back}</a>
      </p>
    </Layout>
  );
}

/** A refusal or a dead end: a title and what happened, with or without the signed-in frame. */
export function messagePage(title: string, message: string, chrome?: Chrome): string {
  const body = (
    <>
      <h1>{title}</h1>
      <p role="alert">{message}</p>
      <p>
        <a href="/settings">Back to settings</a>
      </p>
    </>
  );
  return render(
    chrome ? (
      <Layout title={title} chrome={chrome}>
        {body}
      </Layout>
    ) : (
      <Bare title={title}>{body}</Bare>
    ),
  );
}

/** The Filter button of a GET filter form, aligned with the fields beside it. */
export const FilterButton = () => (
  <div className="field">
    <span className="label-space" aria-hidden="true">
      &nbsp;
    </span>
    <button type="submit" className="secondary">
      Filter
    </button>
  </div>
);

/** Newer and Older links of a paged list, keeping its filter (`query`). */
/** A log's filter by status (GET `action`?status=): "Any" or one of `statuses`. */
export function StatusFilter(props: { action: string; statuses: readonly string[]; chosen?: string }) {
  return (
    <form method="get" action={props.action} className="actions">
      <Field
        id="status"
        label="Status"
        errors={{}}
        control={(a) => (
          <Select {...a} options={['', ...props.statuses]} chosen={props.chosen ?? ''} labels={{ '': 'Any' }} />
        )}
      />
      <FilterButton />
    </form>
  );
}

export function Pager(props: { query: Record<string, string>; page: number; more: boolean }) {
  const q = (page: number) => `?${new URLSearchParams({ ...props.query, page: String(page) })}`;
  return (
    <nav aria-label="Pages" className="actions">
      {props.page > 1 ? <a href={q(props.page - 1)}>Newer</a> : null}
      {props.more ? <a href={q(props.page + 1)}>Older</a> : null}
    </nav>
  );
}
