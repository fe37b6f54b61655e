import { createContext, createElement, Fragment, useContext, type ReactNode } from 'react';
import { ResumeEmailForm, ResumeEmailView } from './resume-email';
import { EndView, NO_RECALL, recallBlock, SAME_PAGE_MARK, withSamePage } from './recall-page';
import type { ErrorDetail } from '../common/errors/api-error';
import { type Block, NUMERIC_TYPES, scaleBounds, SCALE_TYPES } from '../forms/blocks';
import type { FormRecord } from '../forms/forms.service';
import { Document, renderPage } from '../common/html';
import { PAGE_SCRIPT, PAGE_STYLE } from './page-assets';
import { typesInWords } from './file-words';
import { pageWords, type PageWords } from './words';
import { ALTCHA_SCRIPT_PATH } from '../access/spam/altcha-assets';
import { CHALLENGE_FIELD, HONEYPOT } from '../access/spam/spam-gate.service';

/**
 * The respondent page, rendered on the server with React (docs/architecture.md): plain HTML that
 * works without JavaScript, one label and one error message per field, and every value from a form
 * or a respondent escaped by the renderer (nothing here is raw HTML).
 */

/** What the respondent sent, as the form post carried it (strings, or lists for checkboxes). */
export type RawAnswers = Record<string, string | string[] | undefined>;

const NL = '\n';

/**
 * What the page shows of file questions (issue 35): the files already uploaded for them (named in
 * the answers so far, of this form only), and each question's size limit on the form's plan.
 */
export interface FileView {
  kept: Map<string, { name: string; size: number }>;
  /** The largest file each file_upload block takes, in MB, by block id. */
  limitMb: Record<string, number>;
}

const NO_FILES: FileView = { kept: new Map(), limitMb: {} };

const MARKS = new RegExp(`${SAME_PAGE_MARK}([^${SAME_PAGE_MARK}]*)${SAME_PAGE_MARK}`, 'g');
const hasMark = (text: string | null | undefined) => !!text?.includes(SAME_PAGE_MARK);

/**
 * A recalled text (issue 46) with each recall of a block above on the same page (SAME_PAGE_MARK)
 * as an empty span naming the block, which the page's script fills in as the person answers;
 * without the script it stays empty. Text either way: the renderer escapes it.
 */
function recalled(text: string | null | undefined): ReactNode {
  if (!text || !hasMark(text)) return text;
  return text
    .split(new RegExp(MARKS.source))
    .map((part, i) => (i % 2 ? <span key={i} data-recall={part} /> : part || null));
}

/** A recalled text where no element can go (an option, the error summary): its same-page recalls empty. */
const unmarked = (text: string) => (hasMark(text) ? text.replace(MARKS, '') : text);

/** Whether a page's blocks recall a block on the same page (the page's script then fills them in). */
const recallsOnPage = (blocks: Block[]) =>
  blocks.some((b) => hasMark(b.title) || hasMark(b.description) || b.choices?.some((c) => hasMark(c.label)));
const hasFiles = (blocks: Block[]) => blocks.some((b) => b.type === 'file_upload');

/** The page's own words (issue 51), for the components of the page being drawn. */
const Words = createContext<PageWords>(pageWords('en'));
const useWords = () => useContext(Words);

/** The words of the language a form is drawn in (its `language`, set when the page chose one; else English). */
export const wordsOf = (form: Pick<FormRecord, 'language'> | undefined) => pageWords(form?.language ?? 'en');

/** The words the page's script says (respondent.script.ts reads them from data-words); none in English. */
function scriptWords(w: PageWords): string | undefined {
  if (w.lang === 'en') return undefined;
  const said = ['submit', 'next', 'turnedSubmit', 'turnedNext', 'removeFile'] as const;
  const words: Record<string, string> = Object.fromEntries(said.map((k) => [k, w.t(k)]));
  words.progress = w.t('progress', { position: '{position}', total: '{total}' });
  return JSON.stringify(words);
}

/** Where the form posts: its page, in the language it was drawn in (issue 51). */
const formAction = (form: Pick<FormRecord, 'publicId' | 'language' | 'languages'>) =>
  form.language && form.languages?.length
    ? `/f/${form.publicId}?lang=${encodeURIComponent(form.language)}`
    : `/f/${form.publicId}`;

/**
 * The language switcher of a form in several languages (issue 51): each language named in itself,
 * the current one marked; a link to the form's page in it.
 */
function Languages(props: { form: FormRecord }) {
  const { form } = props;
  const w = useWords();
  if (!form.language || (form.languages ?? []).length < 2) return null;
  const nameOf = (tag: string) => {
    try {
      return new Intl.DisplayNames([tag], { type: 'language' }).of(tag) ?? tag;
    } catch {
      return tag;
    }
  };
  return (
    <nav aria-label={w.t('language')} className="desc">
      {form.languages.map((tag, i) => (
        <Fragment key={tag}>
          {i > 0 ? ' · ' : null}
          {tag === form.language ? (
            <strong lang={tag} aria-current="true">
              {nameOf(tag)}
            </strong>
          ) : (
            <a href={`/f/${form.publicId}?lang=${encodeURIComponent(tag)}`} lang={tag} hrefLang={tag}>
              {nameOf(tag)}
            </a>
          )}
        </Fragment>
      ))}
    </nav>
  );
}

/** A respondent page: the shared shell, one main column, in the words' language and direction. */
function Page(props: { title: string; script?: string; words?: PageWords; children: ReactNode }): string {
  const words = props.words ?? pageWords('en');
  return renderPage(
    <Document
      title={props.title}
      script={props.script}
      stylesheet={PAGE_STYLE.path}
      lang={words.lang}
      dir={words.dir === 'rtl' ? 'rtl' : undefined}
    >
      <Words.Provider value={words}>
        <main>{props.children}</main>
      </Words.Provider>
    </Document>,
  );
}

/** "Questions marked * are required.", the mark where the language puts it. */
function RequiredNote() {
  const [before, after] = useWords().t('requiredNote', { mark: '\u0000' }).split('\u0000');
  return (
    <p className="desc">
      {before}
      <span className="req">*</span>
      {after}
    </p>
  );
}

/**
 * The form, with the respondent's values and the errors of a refused submission when there are some.
 * The error summary takes the focus when the page loads (autofocus: the CSP allows no script), so
 * a keyboard or screen-reader user starts at the list of problems, each a link to its field.
 */
export function formPage(
  form: FormRecord,
  values: RawAnswers = {},
  errors: ErrorDetail[] = [],
  files: FileView = NO_FILES,
  spam: SpamView = {},
): string {
  const w = wordsOf(form);
  const errorFor = errorsByBlock(errors, w);
  const withFiles = hasFiles(form.blocks);
  // Recall (issue 46): every block recalled is on this one page, filled in by the script as the person answers.
  const onPage = withSamePage(NO_RECALL, form.blocks);
  const blocks = form.blocks.map((b) => recallBlock(b, onPage));
  return Page({
    title: form.title,
    words: w,
    script: withFiles || recallsOnPage(blocks) ? PAGE_SCRIPT.path : undefined,
    children: (
      <>
        <Languages form={form} />
        <h1>{form.title}</h1>
        {form.description ? <p className="desc">{form.description}</p> : null}
        {spam.notice ? (
          <p className="notice" role="status">
            {spam.notice}
          </p>
        ) : null}
        <ErrorSummary blocks={blocks} errorFor={errorFor} />
        <form
          method="post"
          action={formAction(form)}
          encType={withFiles ? 'multipart/form-data' : undefined}
          data-uploads={withFiles ? `/f/${form.publicId}/uploads` : undefined}
          data-recall={recallsOnPage(blocks) ? '' : undefined}
          data-words={scriptWords(w)}
          noValidate
        >
          {spam.state ? <input type="hidden" name="_state" value={spam.state} /> : null}
          <RequiredNote />
          {blocks.map((b) => (
            <Field key={b.id} b={b} value={values[b.id]} error={errorFor.get(b.id)} files={files} />
          ))}
          <SpamFields challenge={spam.challenge} />
          <button type="submit">{w.t('submit')}</button>
        </form>
      </>
    ),
  });
}

/** One page of a form of several pages (see RespondentController's walk): what it shows and where it is. */
export interface StepView {
  /** The page_break that starts the page (its title and description head the page), if any. */
  start?: Block;
  /** The page's blocks that the answers so far show. */
  blocks: Block[];
  /**
   * All the page's blocks, when some may be shown by answers on the page: those not shown are
   * drawn hidden, for the page's script to show (with logic, which it reads).
   */
  all?: Block[];
  logic?: unknown;
  /** "Page {position} of {total}": the pages on the path the answers so far take. */
  position: number;
  total: number;
  /** The signed state (PageStateSigner), carried by the page's one hidden field. */
  state: string;
  back: boolean;
  last: boolean;
  /** Said once at the top (role=status), e.g. when answers showed more questions on this page. */
  notice?: string;
  files?: FileView;
  /** The form saves partial responses: the first page says so, every page offers "Save and finish later". */
  saves?: boolean;
  /** The spam check's challenge URL, when the page asks for one (SpamFields). */
  challenge?: string;
}

/**
 * The spam checks a page carries (issue 47): the one-page form's signed state (when it was drawn),
 * and the challenge's URL when the page asks for one.
 */
export interface SpamView {
  state?: string;
  challenge?: string;
  /** Said once at the top (role=status): the page asks for the check it did not ask for before. */
  notice?: string;
}

/**
 * The honeypot (a field people never see nor reach: off-screen, out of the tab order, hidden from
 * assistive technology; bots that fill every field fill it) and, when asked, the proof-of-work
 * widget: it fetches its challenge and solves it while the person answers, and posts the solution
 * in CHALLENGE_FIELD. Without JavaScript a note says the answers are kept for review.
 */
function SpamFields(props: { challenge?: string }) {
  const w = useWords();
  return (
    <>
      <div
        aria-hidden="true"
        style={{ position: 'absolute', insetInlineStart: '-10000px', width: '1px', height: '1px', overflow: 'hidden' }}
      >
        <label>
          {w.t('leaveEmpty')} <input type="text" name={HONEYPOT} tabIndex={-1} autoComplete="off" defaultValue="" />
        </label>
      </div>
      {props.challenge ? (
        <>
          <div className="field">
            {createElement('altcha-widget', { challenge: props.challenge, name: CHALLENGE_FIELD, auto: 'onload' })}
          </div>
          <script src={ALTCHA_SCRIPT_PATH} defer />
          <noscript>
            <p className="desc">{w.t('spamNoScript')}</p>
          </noscript>
        </>
      ) : null}
    </>
  );
}

/**
 * A page of a form of several pages. It works like the one-page form (labels, the error summary
 * that takes the focus, answers kept) and adds: the page's own heading, "Page 2 of 4" in the
 * document title (read first by screen readers as each page loads) and above the questions, the
 * state as one hidden field, and Next (Submit where the answers end the form) before Back in the
 * document, so Enter in a field goes forward (the row shows Back first). Questions the answers do
 * not show yet are drawn hidden, with the page's rules in data-logic, for the page's script to
 * show as soon as the answers on the page call for them (and to say so in #announce).
 */
export function stepPage(
  form: FormRecord,
  step: StepView,
  values: RawAnswers = {},
  errors: ErrorDetail[] = [],
): string {
  const w = wordsOf(form);
  const errorFor = errorsByBlock(errors, w);
  const progress = w.t('progress', { position: w.number(step.position), total: w.number(step.total) });
  const shown = new Set(step.blocks.map((b) => b.id));
  const all = step.all ?? step.blocks;
  const withFiles = hasFiles(all);
  return Page({
    title: `${progress}: ${form.title}`,
    words: w,
    script: step.logic || withFiles || recallsOnPage(all) ? PAGE_SCRIPT.path : undefined,
    children: (
      <>
        {step.position === 1 ? <Languages form={form} /> : null}
        <h1>{form.title}</h1>
        {step.position === 1 && form.description ? <p className="desc">{form.description}</p> : null}
        {step.saves && step.position === 1 ? <p className="desc">{w.t('savedAsYouGo')}</p> : null}
        <p className="muted" id="progress">
          {progress}
        </p>
        {step.notice ? (
          <p className="notice" role="status">
            {step.notice}
          </p>
        ) : null}
        <ErrorSummary blocks={step.blocks} errorFor={errorFor} />
        {step.logic ? <p className="visually-hidden" id="announce" aria-live="polite"></p> : null}
        <form
          method="post"
          action={formAction(form)}
          encType={withFiles ? 'multipart/form-data' : undefined}
          data-uploads={withFiles ? `/f/${form.publicId}/uploads` : undefined}
          noValidate
          data-logic={step.logic ? JSON.stringify(step.logic) : undefined}
          data-recall={recallsOnPage(all) ? '' : undefined}
          data-words={scriptWords(w)}
        >
          <input type="hidden" name="_state" value={step.state} />
          {step.start?.title ? <h2>{step.start.title}</h2> : null}
          {step.start?.description ? <p className="desc">{step.start.description}</p> : null}
          {all.some((b) => b.required) ? <RequiredNote /> : null}
          {/* Each question in a wrapper the script can show or hide (q-{id}); one not shown yet is drawn hidden. */}
          {all
            .filter((b) => b.type !== 'page_break')
            .map((b) => (
              <div key={b.id} id={`q-${b.id}`} hidden={!shown.has(b.id)}>
                <Field b={b} value={values[b.id]} error={errorFor.get(b.id)} files={step.files ?? NO_FILES} />
              </div>
            ))}
          <SpamFields challenge={step.challenge} />
          <div className="actions" style={{ flexDirection: 'row-reverse', justifyContent: 'flex-end' }}>
            <button type="submit" name="_action" value={step.last ? 'submit' : 'next'}>
              {w.t(step.last ? 'submit' : 'next')}
            </button>
            {step.back ? (
              <button type="submit" name="_action" value="back" className="secondary">
                {w.t('back')}
              </button>
            ) : null}
          </div>
          {step.saves ? (
            <p>
              <button type="submit" name="_action" value="save" className="secondary">
                {w.t('saveLater')}
              </button>
            </p>
          ) : null}
        </form>
      </>
    ),
  });
}

/** Validation's sentence for a required question left blank, said in the page's language (the others are English yet). */
const NEEDS_ANSWER = 'This question needs an answer.';

/** The first message for each block of a refused submission, by block id. */
function errorsByBlock(errors: ErrorDetail[], w: PageWords): Map<string, string> {
  const errorFor = new Map<string, string>();
  for (const e of errors) {
    const blockId = e.path
      .replace(/^\/answers\//, '')
      .replace(/~1/g, '/')
      .replace(/~0/g, '~');
    if (!errorFor.has(blockId))
      errorFor.set(blockId, e.message === 'is required' || e.message === NEEDS_ANSWER ? w.t('needsAnswer') : e.message);
  }
  return errorFor;
}

/** The error summary, which takes the focus when the page loads (autofocus: the CSP allows no script). */
function ErrorSummary(props: { blocks: Block[]; errorFor: Map<string, string> }) {
  const { errorFor } = props;
  const w = useWords();
  if (!errorFor.size) return null;
  const titles = new Map(props.blocks.map((b) => [b.id, unmarked(b.title)]));
  return (
    <div className="summary" role="alert" aria-labelledby="summary-title" tabIndex={-1} autoFocus id="errors">
      <h2 id="summary-title">{w.t('problems', { count: errorFor.size })}</h2>
      <ul>
        {[...errorFor].map(([id, message]) => (
          <li key={id}>
            <SummaryLink id={id} title={titles.get(id) ?? id} message={message} />
          </li>
        ))}
      </ul>
    </div>
  );
}

/**
 * One entry of the error summary: the question, then what to do, as two sentences (a question that
 * ends without punctuation gets a full stop only screen readers hear, so "Name" and "How many
 * guests?" both read well and no "?:" appears).
 */
function SummaryLink(props: { id: string; title: string; message: string }) {
  const stop = /[.?!:…]$/.test(props.title.trim()) ? ' ' : <span className="visually-hidden">. </span>;
  return (
    <a href={`#f-${props.id}`}>
      <span className="question">{props.title}</span>
      {stop}
      <span className="problem">{props.message}</span>
    </a>
  );
}

const INPUT_TYPES: Record<string, string> = {
  short_text: 'text',
  email: 'email',
  url: 'url',
  phone: 'tel',
  number: 'number',
  date: 'date',
};

/** One question: its label (or legend), description, error and input, wired by ids and ARIA. */
function Field(props: { b: Block; value: string | string[] | undefined; error: string | undefined; files: FileView }) {
  const { b, value, error } = props;
  const w = useWords();
  // A page_break takes no answer: it only starts a page (its title heads the page), never an input.
  if (b.type === 'page_break') return null;
  if (b.type === 'statement') {
    return (
      <div className="field statement">
        <p>
          <strong>{recalled(b.title)}</strong>
        </p>
        {b.description ? <p className="desc">{recalled(b.description)}</p> : null}
      </div>
    );
  }
  const id = `f-${b.id}`;
  const ends = b.minLabel !== undefined || b.maxLabel !== undefined;
  const describedBy =
    [b.description ? `d-${b.id}` : '', ends ? `l-${b.id}` : '', error ? `e-${b.id}` : ''].filter(Boolean).join(' ') ||
    undefined;
  const aria = {
    'aria-describedby': describedBy,
    'aria-invalid': error ? ('true' as const) : undefined,
    'aria-required': b.required ? ('true' as const) : undefined,
    required: b.required || undefined,
  };
  const mark = b.required ? (
    <>
      {' '}
      <span className="req" aria-hidden="true">
        *
      </span>
    </>
  ) : null;
  const desc = b.description ? (
    <p className="desc" id={`d-${b.id}`}>
      {recalled(b.description)}
    </p>
  ) : null;
  const err = error ? (
    <p className="error" id={`e-${b.id}`}>
      <span aria-hidden="true">⚠ </span>
      {error}
    </p>
  ) : null;
  const one = Array.isArray(value) ? value[0] : value;

  if (b.type === 'matrix')
    return (
      <MatrixField b={b} value={value} error={error} describedBy={describedBy} mark={mark} desc={desc} err={err} />
    );
  if (b.type === 'ranking')
    return (
      <RankingField b={b} value={value} error={error} describedBy={describedBy} mark={mark} desc={desc} err={err} />
    );
  const options = choicesOf(b, w);
  if (options) {
    const chosen = new Set(Array.isArray(value) ? value : value !== undefined ? [value] : []);
    if (b.type === 'dropdown') {
      return (
        <div className="field">
          <label htmlFor={id}>
            {recalled(b.title)}
            {mark}
          </label>
          {desc}
          {err}
          {NL}
          <select id={id} name={b.id} {...aria} defaultValue={options.find((o) => chosen.has(o.value))?.value ?? ''}>
            <option value="">{w.t('choose')}</option>
            {options.map((o) => (
              <option key={o.value} value={o.value}>
                {unmarked(o.label)}
              </option>
            ))}
          </select>
        </div>
      );
    }
    const kind = b.type === 'checkboxes' ? 'checkbox' : 'radio';
    const inputs = options.map((o, i) => (
      <Fragment key={o.value}>
        {i > 0 ? NL : null}
        <label>
          <input
            type={kind}
            name={b.id}
            value={o.value}
            id={i === 0 ? id : undefined}
            defaultChecked={chosen.has(o.value)}
            aria-invalid={error ? 'true' : undefined}
          />{' '}
          {recalled(o.label)}
        </label>
      </Fragment>
    ));
    // The points of a rating or scale sit in one row of equal cells (a 0-10 scale included), wrapping evenly on phones.
    const scale = SCALE_TYPES.includes(b.type);
    return (
      <fieldset
        className="field"
        role={kind === 'radio' ? 'radiogroup' : undefined}
        aria-required={kind === 'radio' && b.required ? 'true' : undefined}
        aria-describedby={describedBy}
      >
        <legend>
          {recalled(b.title)}
          {mark}
        </legend>
        {desc}
        {err}
        {NL}
        {scale ? (
          <>
            <div className="scale">{inputs}</div>
            {ends ? <ScaleEnds b={b} options={options} /> : null}
          </>
        ) : (
          inputs
        )}
      </fieldset>
    );
  }

  const label = (
    <label htmlFor={id}>
      {recalled(b.title)}
      {mark}
    </label>
  );
  if (b.type === 'file_upload')
    return <FileField b={b} value={value} files={props.files} aria={aria} err={err} desc={desc} label={label} />;
  if (b.type === 'long_text') {
    return (
      <div className="field">
        {label}
        {desc}
        {err}
        <textarea id={id} name={b.id} rows={5} {...aria} defaultValue={one ?? ''} />
      </div>
    );
  }
  const extra =
    b.type === 'number'
      ? { step: 'any', min: b.min, max: b.max, inputMode: 'decimal' as const }
      : b.type === 'email'
        ? { autoComplete: 'email' }
        : b.type === 'phone'
          ? { autoComplete: 'tel' }
          : {};
  return (
    <div className="field">
      {label}
      {desc}
      {err}
      <input type={INPUT_TYPES[b.type] ?? 'text'} id={id} name={b.id} defaultValue={one ?? ''} {...extra} {...aria} />
    </div>
  );
}

/** 1536 → "1.5 KB": a file's size as people read it. */
export function sizeText(bytes: number, w: PageWords = pageWords('en')): string {
  if (bytes < 1024)
    return new Intl.NumberFormat(w.lang, { style: 'unit', unit: 'byte', unitDisplay: 'long' }).format(bytes);
  const [n, unit] = bytes < 1024 * 1024 ? [bytes / 1024, 'KB'] : [bytes / (1024 * 1024), 'MB'];
  return `${w.number(Number(n.toFixed(1)))} ${unit}`;
}

/** What a file question takes, said under its label: "Accepted: PDF or .docx files. Up to 10 MB each; at most 3 files." */
function fileRules(b: Block, limitMb: number | undefined, w: PageWords): string {
  const max = b.maxFiles ?? 1;
  const types = b.accept?.length ? w.t('acceptedFiles', { types: typesInWords(b.accept) }) : w.t('anyFile');
  return `${types} ${w.t('fileLimit', { max, mb: w.number(limitMb ?? b.maxSizeMb ?? 10) })}`;
}

/**
 * A file question (file_upload): its label, what it takes (types, size limit: read with the input
 * through aria-describedby), the files already uploaded for it, each a ticked "Keep" box (untick
 * to remove it: the post drops it), and the file input. Without JavaScript the form posts the file
 * (multipart); with it, the page's script sends the file straight to storage and keeps its id in
 * a field of the same name (respondent.script.ts), so the post carries ids only.
 */
function FileField(props: {
  b: Block;
  value: string | string[] | undefined;
  files: FileView;
  aria: { 'aria-describedby'?: string; 'aria-invalid'?: 'true'; 'aria-required'?: 'true'; required?: boolean };
  err: ReactNode;
  desc: ReactNode;
  label: ReactNode;
}) {
  const { b, files } = props;
  const w = useWords();
  const ids = (Array.isArray(props.value) ? props.value : props.value ? [props.value] : []).filter((id) =>
    files.kept.has(id),
  );
  const max = b.maxFiles ?? 1;
  const rulesId = `a-${b.id}`;
  const describedBy = [rulesId, props.aria['aria-describedby']].filter(Boolean).join(' ');
  return (
    <div className="field">
      {props.label}
      {props.desc}
      <p className="desc" id={rulesId}>
        {fileRules(b, files.limitMb[b.id], w)}
      </p>
      {props.err}
      {ids.length ? (
        <ul className="files" id={`k-${b.id}`} aria-label={w.t('uploadedFiles')}>
          {ids.map((id) => (
            <li key={id}>
              <label>
                <input type="checkbox" name={b.id} value={id} defaultChecked />{' '}
                {w.t('keepFile', { name: files.kept.get(id)!.name })} ({sizeText(files.kept.get(id)!.size, w)})
              </label>
            </li>
          ))}
        </ul>
      ) : null}
      {NL}
      <input
        type="file"
        id={`f-${b.id}`}
        name={b.id}
        accept={b.accept?.join(',') || undefined}
        multiple={max > 1 || undefined}
        data-max-files={max}
        {...props.aria}
        aria-describedby={describedBy}
        required={props.aria.required && !ids.length ? true : undefined}
      />
    </div>
  );
}

/**
 * The end labels of a rating or scale (minLabel, maxLabel), drawn under its first and last points
 * and read with the question ("1: Not at all, 10: Very much", through aria-describedby).
 */
function ScaleEnds(props: { b: Block; options: Array<{ value: string }> }) {
  const { b, options } = props;
  const end = (value: string | undefined, label: string | undefined, align: 'left' | 'right') =>
    label === undefined ? (
      <span></span>
    ) : (
      <span style={{ textAlign: align }}>
        <span className="visually-hidden">{value}: </span>
        {label}
      </span>
    );
  return (
    <p
      className="desc scale-ends"
      id={`l-${b.id}`}
      style={{ display: 'flex', justifyContent: 'space-between', gap: '1rem' }}
    >
      {end(options[0]?.value, b.minLabel, 'left')}
      {end(options[options.length - 1]?.value, b.maxLabel, 'right')}
    </p>
  );
}

/** A question answered by a group of controls (a ranking's selects, a matrix's rows), with its parts as Field made them. */
interface GroupFieldProps {
  b: Block;
  value: string | string[] | undefined;
  error: string | undefined;
  describedBy: string | undefined;
  mark: ReactNode;
  desc: ReactNode;
  err: ReactNode;
}

/**
 * A ranking without script: a place to choose for each option (1 is best), posted as
 * "<choice id>:<place>" under the block's id (rankingFromPost reads them back).
 */
function RankingField(props: GroupFieldProps) {
  const { b, value } = props;
  const w = useWords();
  const posted = Array.isArray(value) ? value : value !== undefined ? [value] : [];
  const places = b.rankTop ?? b.choices?.length ?? 0;
  return (
    <fieldset className="field ranking" aria-describedby={props.describedBy}>
      <legend>
        {b.title}
        {props.mark}
      </legend>
      {props.desc}
      <p className="desc">{b.rankTop ? w.t('rankTop', { count: places }) : w.t('rankAll')}</p>
      {props.err}
      {(b.choices ?? []).map((c, i) => {
        const sid = i === 0 ? `f-${b.id}` : `f-${b.id}-${i}`;
        return (
          <div className="rank" key={c.id} style={{ display: 'flex', alignItems: 'center', gap: '0.75rem' }}>
            <select
              style={{ width: '5rem', flex: 'none' }}
              id={sid}
              name={b.id}
              aria-invalid={props.error ? 'true' : undefined}
              defaultValue={posted.find((v) => v.startsWith(`${c.id}:`)) ?? ''}
            >
              <option value="">–</option>
              {Array.from({ length: places }, (_, p) => (
                <option key={p} value={`${c.id}:${p + 1}`}>
                  {p + 1}
                </option>
              ))}
            </select>{' '}
            <label htmlFor={sid}>{c.label}</label>
          </div>
        );
      })}
    </fieldset>
  );
}

/**
 * A matrix as a grid on wide screens and one question per row on phones (CSS only, so without
 * script too): each row a radio group (checkboxes when multiple) named "<block id>:<row id>",
 * each option labelled with its column (shown above the grid instead on wide screens).
 */
function MatrixField(props: GroupFieldProps) {
  const { b, value } = props;
  const posted = new Set(Array.isArray(value) ? value : value !== undefined ? [value] : []);
  const columns = b.columns ?? [];
  return (
    <fieldset className="field" aria-describedby={props.describedBy}>
      <legend>
        {recalled(b.title)}
        {props.mark}
      </legend>
      {props.desc}
      {props.err}
      <div className="matrix">
        <div className="mhead" aria-hidden="true">
          <span />
          {columns.map((c) => (
            <span key={c.id}>{c.label}</span>
          ))}
        </div>
        {(b.rows ?? []).map((r, i) => (
          <div
            className="mrow"
            key={r.id}
            role={b.multiple ? 'group' : 'radiogroup'}
            aria-labelledby={`r-${b.id}-${i}`}
            aria-required={!b.multiple && b.required ? 'true' : undefined}
          >
            <span className="rowlabel" id={`r-${b.id}-${i}`}>
              {r.label}
            </span>
            {columns.map((c, j) => (
              <label key={c.id}>
                <input
                  type={b.multiple ? 'checkbox' : 'radio'}
                  name={`${b.id}:${r.id}`}
                  value={c.id}
                  id={i === 0 && j === 0 ? `f-${b.id}` : undefined}
                  defaultChecked={posted.has(`${r.id}:${c.id}`)}
                  aria-invalid={props.error ? 'true' : undefined}
                />{' '}
                <span className="clabel">{c.label}</span>
              </label>
            ))}
          </div>
        ))}
      </div>
    </fieldset>
  );
}

/**
 * A ranking as posted ("<choice id>:<place>" per option placed): the options in the order of their
 * places. Two at one place send the first twice, which validation refuses in the page's words.
 */
export function rankingFromPost(values: string[]): string[] {
  const placed = values
    .map((v) => ({ id: v.slice(0, v.lastIndexOf(':')), place: Number(v.slice(v.lastIndexOf(':') + 1)) }))
    .sort((a, b) => a.place - b.place);
  return placed.map((p, i) => (i > 0 && placed[i - 1].place === p.place ? placed[i - 1].id : p.id));
}

/**
 * A matrix's rows are posted as fields of their own ("<block id>:<row id>", a radio group each):
 * folded here into the block's field as "<row id>:<column id>" values, the form every other step
 * (page state, resumes, answersFromFormPost) reads.
 */
export function foldMatrixFields(blocks: Block[], raw: RawAnswers): RawAnswers {
  const matrices = blocks.filter((b) => b.type === 'matrix');
  if (!matrices.length || typeof raw !== 'object' || raw === null) return raw;
  const out: RawAnswers = { ...raw };
  for (const b of matrices) {
    const folded = (b.rows ?? []).flatMap((r) => {
      const v = raw[`${b.id}:${r.id}`];
      return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x) => x !== '').map((x) => `${r.id}:${x}`);
    });
    if (folded.length) out[b.id] = folded;
    for (const r of b.rows ?? []) delete out[`${b.id}:${r.id}`];
  }
  return out;
}

/** Options of blocks answered by picking: choices, yes/no, and the points of a rating or scale. */
function choicesOf(b: Block, w: PageWords): Array<{ value: string; label: string }> | undefined {
  if (b.choices) return b.choices.map((c) => ({ value: c.id, label: c.label }));
  if (b.type === 'yes_no')
    return [
      { value: 'true', label: w.t('yes') },
      { value: 'false', label: w.t('no') },
    ];
  if (SCALE_TYPES.includes(b.type)) {
    const { min, max } = scaleBounds(b);
    return Array.from({ length: max - min + 1 }, (_, i) => ({ value: String(min + i), label: String(min + i) }));
  }
  return undefined;
}

/**
 * A form post's strings as typed answers, so they go through the very same validation as the API:
 * numbers and points become numbers, yes/no a boolean, checkboxes a list; blanks are left out.
 * Fields that name no block (a button's name, say) are ignored.
 */
export function answersFromFormPost(blocks: Block[], raw: RawAnswers): Record<string, unknown> {
  const answers: Record<string, unknown> = {};
  for (const b of blocks) {
    const value = raw[b.id];
    if (value === undefined) continue;
    if (b.type === 'ranking') {
      const list = (Array.isArray(value) ? value : [value]).filter((v) => v.includes(':'));
      if (list.length) answers[b.id] = rankingFromPost(list);
      continue;
    }
    if (b.type === 'matrix') {
      // "<row id>:<column id>" per column picked (foldMatrixFields): the object validation takes.
      // A Map: a posted row named "constructor" or "__proto__" is a row that does not exist (400), not Object's.
      const picked = new Map<string, string[]>();
      for (const v of Array.isArray(value) ? value : [value]) {
        const at = v.indexOf(':');
        if (at <= 0) continue;
        const row = v.slice(0, at);
        picked.set(row, [...(picked.get(row) ?? []), v.slice(at + 1)]);
      }
      const rows = [...picked].map(([row, cols]) => [row, b.multiple ? cols : cols[0]]);
      if (rows.length) answers[b.id] = Object.fromEntries(rows);
      continue;
    }
    if (b.type === 'checkboxes' || b.type === 'file_upload') {
      const list = (Array.isArray(value) ? value : [value]).filter((v) => v !== '');
      if (list.length) answers[b.id] = b.type === 'file_upload' ? [...new Set(list)] : list;
      continue;
    }
    const text = Array.isArray(value) ? value[0] : value;
    if (text === undefined || text.trim() === '') continue;
    if (NUMERIC_TYPES.includes(b.type)) {
      // Plain decimals only: Number() would also take "0x10" or "0b101".
      const trimmed = text.trim();
      answers[b.id] = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(trimmed) ? Number(trimmed) : text;
    } else if (b.type === 'yes_no') {
      answers[b.id] = text === 'true' ? true : text === 'false' ? false : text;
    } else {
      answers[b.id] = text;
    }
  }
  return answers;
}

export function thankYouPage(form: FormRecord, end?: EndView): string {
  const w = wordsOf(form);
  return Page({
    title: `${end?.title ?? w.t('thankYouTitle')}: ${form.title}`,
    words: w,
    children: (
      <>
        <h1>{end?.title ?? w.t('thankYou')}</h1>
        <p role="status">{end?.message ?? w.t('received', { title: form.title })}</p>
        {end?.redirectUrl ? (
          <p>
            <a href={end.redirectUrl}>{w.t('continue')}</a>
          </p>
        ) : null}
      </>
    ),
  });
}

/**
 * After "Save and finish later": the resume link to copy (a read-only field), what it gives its
 * holder, and a link to go on now.
 */
export function savedPage(form: FormRecord, link: string, days: number, email?: ResumeEmailView): string {
  return Page({
    title: `Answers saved: ${form.title}`,
    children: (
      <>
        <h1>Your answers are saved</h1>
        <p role="status">Your answers to “{form.title}” so far are saved.</p>
        <p>
          In this browser, open the form again to go on where you stopped. To finish on another device, copy this link:
        </p>
        <div className="field">
          <label htmlFor="resume-link">Link to finish later</label>
          {/* A text area, so the whole link shows on a phone too (it wraps). */}
          <textarea id="resume-link" readOnly rows={3} defaultValue={link} style={{ wordBreak: 'break-all' }} />
        </div>
        <p className="desc">
          Keep this link to yourself. Opened in another browser or device, it moves your answers there, and then no
          longer opens them here. It stops working once you submit, or after {days} days without a change.
        </p>
        {email ? <ResumeEmailForm publicId={form.publicId} view={email} /> : null}
        <p>
          <a href={link}>Go on now</a>
        </p>
      </>
    ),
  });
}

/** A resume link (or this browser's saved answers) of a response already submitted: nothing of its answers. */
export function alreadySubmittedPage(form: FormRecord): string {
  return Page({
    title: `Already submitted: ${form.title}`,
    children: (
      <>
        <h1>Already submitted</h1>
        <p role="status">These answers to “{form.title}” were already submitted: the link no longer opens them.</p>
        <p>
          <a href={`/f/${form.publicId}`}>Fill in the form again</a>
        </p>
      </>
    ),
  });
}

export function messagePage(title: string, message: string): string {
  return Page({
    title,
    children: (
      <>
        <h1>{title}</h1>
        <p>{message}</p>
      </>
    ),
  });
}

/**
 * A resume link opened in a browser that does not hold it, where the move is asked first (see
 * RespondentController.resume): none of the answers, and a button that moves them here.
 */
export function confirmResumePage(form: FormRecord, secret: string, ownAnswers: boolean): string {
  return Page({
    title: `Continue your answers: ${form.title}`,
    children: (
      <>
        <h1>Continue your answers</h1>
        <p>This link opens answers to “{form.title}” saved to finish later.</p>
        <p>
          Continue in this browser? The answers then move here, and the link no longer opens them anywhere else.
          {ownAnswers ? ' The answers in progress in this browser are then no longer shown here.' : ''}
        </p>
        <form method="post" action={formAction(form)}>
          <input type="hidden" name="_resume" value={secret} />
          <button type="submit">Continue here</button>
        </form>
        <p>
          <a href={`/f/${form.publicId}`}>Start the form afresh instead</a>
        </p>
      </>
    ),
  });
}

/** A resume link whose answers moved to another browser (it was opened there): nothing of them. */
export function movedPage(form: FormRecord): string {
  return Page({
    title: `Opened elsewhere: ${form.title}`,
    children: (
      <>
        <h1>Opened in another browser</h1>
        <p role="status">
          This link to finish “{form.title}” was opened in another browser; its answers continue there. Go on in the
          browser where it was opened.
        </p>
        <p>
          <a href={`/f/${form.publicId}`}>Fill in the form again</a>
        </p>
      </>
    ),
  });
}

/** A post to the form's page that another site's page made: refused, nothing stored. */
export function crossSitePage(form: FormRecord): string {
  return Page({
    title: `Not sent: ${form.title}`,
    children: (
      <>
        <h1>Your answers were not sent</h1>
        <p role="alert">
          They came from a page on another site, not from this form’s own page, so nothing was kept. Open the form at
          its own address and fill it in there.
        </p>
        <p>
          <a href={`/f/${form.publicId}`}>Open “{form.title}”</a>
        </p>
      </>
    ),
  });
}
