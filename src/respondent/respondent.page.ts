import type { ErrorDetail } from '../common/errors/api-error';
import type { Block } from '../forms/blocks';
import type { FormRecord } from '../forms/forms.service';
import { esc, page } from '../common/html';
import { SCRIPT_PATH } from './respondent.script';

/**
 * The respondent page, rendered on the server: plain HTML that works without JavaScript, one
 * label and one error message per field, and every value from a form or a respondent escaped.
 */

/** What the respondent sent, as the form post carried it (strings, or lists for checkboxes). */
export type RawAnswers = Record<string, string | string[] | undefined>;

/**
 * The form, with the respondent's values and the errors of a refused submission when there are some.
 * The error summary takes the focus when the page loads (autofocus: the CSP allows no script), so
 * a keyboard or screen-reader user starts at the list of problems, each a link to its field.
 */
export function formPage(form: FormRecord, values: RawAnswers = {}, errors: ErrorDetail[] = []): string {
  const errorFor = errorsByBlock(errors);
  const summary = errorSummary(form.blocks, errorFor);
  const fields = form.blocks.map((b) => field(b, values[b.id], errorFor.get(b.id))).join('\n');
  return page(
    form.title,
    `<h1>${esc(form.title)}</h1>
${form.description ? `<p class="desc">${esc(form.description)}</p>` : ''}
${summary}
<form method="post" action="/f/${esc(form.publicId)}" novalidate>
<p class="desc">Questions marked <span class="req">*</span> are required.</p>
${fields}
<button type="submit">Submit</button>
</form>`,
  );
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
  const errorFor = errorsByBlock(errors);
  const progress = `Page ${step.position} of ${step.total}`;
  const heading = step.start?.title ? `<h2>${esc(step.start.title)}</h2>` : '';
  const startDesc = step.start?.description ? `<p class="desc">${esc(step.start.description)}</p>` : '';
  const shown = new Set(step.blocks.map((b) => b.id));
  // Each question in a wrapper the script can show or hide (q-{id}); one not shown yet is drawn hidden.
  const fields = (step.all ?? step.blocks)
    .filter((b) => b.type !== 'page_break')
    .map(
      (b) =>
        `<div id="q-${esc(b.id)}"${shown.has(b.id) ? '' : ' hidden'}>${field(b, values[b.id], errorFor.get(b.id))}</div>`,
    )
    .join('\n');
  const required = (step.all ?? step.blocks).some((b) => b.required)
    ? '<p class="desc">Questions marked <span class="req">*</span> are required.</p>\n'
    : '';
  return page(
    `${progress}: ${form.title}`,
    `<h1>${esc(form.title)}</h1>
${step.position === 1 && form.description ? `<p class="desc">${esc(form.description)}</p>` : ''}
<p class="muted" id="progress">${progress}</p>
${step.notice ? `<p class="notice" role="status">${esc(step.notice)}</p>` : ''}
${errorSummary(step.blocks, errorFor)}
${step.logic ? '<p class="visually-hidden" id="announce" aria-live="polite"></p>\n' : ''}<form method="post" action="/f/${esc(form.publicId)}" novalidate${step.logic ? ` data-logic="${esc(JSON.stringify(step.logic))}"` : ''}>
<input type="hidden" name="_state" value="${esc(step.state)}">
${heading}${startDesc}${required}${fields}
<div class="actions" style="flex-direction: row-reverse; justify-content: flex-end">
<button type="submit" name="_action" value="${step.last ? 'submit' : 'next'}">${step.last ? 'Submit' : 'Next'}</button>
${step.back ? '<button type="submit" name="_action" value="back" class="secondary">Back</button>' : ''}
</div>
</form>`,
    step.logic ? { script: SCRIPT_PATH } : {},
  );
}

/** The first message for each block of a refused submission, by block id. */
function errorsByBlock(errors: ErrorDetail[]): Map<string, string> {
  const errorFor = new Map<string, string>();
  for (const e of errors) {
    const blockId = e.path
      .replace(/^\/answers\//, '')
      .replace(/~1/g, '/')
      .replace(/~0/g, '~');
    if (!errorFor.has(blockId))
      errorFor.set(blockId, e.message === 'is required' ? 'This question needs an answer.' : e.message);
  }
  return errorFor;
}

/** The error summary, which takes the focus when the page loads (autofocus: the CSP allows no script). */
function errorSummary(blocks: Block[], errorFor: Map<string, string>): string {
  if (!errorFor.size) return '';
  const titles = new Map(blocks.map((b) => [b.id, b.title]));
  return `<div class="summary" role="alert" aria-labelledby="summary-title" tabindex="-1" autofocus id="errors">
  <h2 id="summary-title">There ${errorFor.size === 1 ? 'is a problem' : `are ${errorFor.size} problems`} with your answers</h2>
  <ul>${[...errorFor].map(([id, message]) => `<li>${summaryLink(id, titles.get(id) ?? id, message)}</li>`).join('')}</ul>
</div>`;
}

/**
 * One entry of the error summary: the question, then what to do, as two sentences (a question that
 * ends without punctuation gets a full stop only screen readers hear, so "Name" and "How many
 * guests?" both read well and no "?:" appears).
 */
function summaryLink(id: string, title: string, message: string): string {
  const stop = /[.?!:…]$/.test(title.trim()) ? ' ' : '<span class="visually-hidden">. </span>';
  return `<a href="#f-${esc(id)}"><span class="question">${esc(title)}</span>${stop}<span class="problem">${esc(message)}</span></a>`;
}

function field(b: Block, value: string | string[] | undefined, error: string | undefined): string {
  // A page_break takes no answer: it only starts a page (its title heads the page), never an input.
  if (b.type === 'page_break') return '';
  if (b.type === 'statement') {
    return `<div class="field statement"><p><strong>${esc(b.title)}</strong></p>${b.description ? `<p class="desc">${esc(b.description)}</p>` : ''}</div>`;
  }
  const id = `f-${b.id}`;
  const ends = b.minLabel !== undefined || b.maxLabel !== undefined;
  const describedBy = [b.description ? `d-${b.id}` : '', ends ? `l-${b.id}` : '', error ? `e-${b.id}` : '']
    .filter(Boolean)
    .join(' ');
  const aria = `${describedBy ? ` aria-describedby="${esc(describedBy)}"` : ''}${error ? ' aria-invalid="true"' : ''}${b.required ? ' aria-required="true" required' : ''}`;
  const mark = b.required ? ' <span class="req" aria-hidden="true">*</span>' : '';
  const desc = b.description ? `<p class="desc" id="d-${esc(b.id)}">${esc(b.description)}</p>` : '';
  const err = error ? `<p class="error" id="e-${esc(b.id)}"><span aria-hidden="true">⚠ </span>${esc(error)}</p>` : '';
  const one = Array.isArray(value) ? value[0] : value;
  const name = esc(b.id);

  const options = choicesOf(b);
  if (options) {
    const chosen = new Set(Array.isArray(value) ? value : value !== undefined ? [value] : []);
    if (b.type === 'dropdown') {
      const opts = options
        .map((o) => `<option value="${esc(o.value)}"${chosen.has(o.value) ? ' selected' : ''}>${esc(o.label)}</option>`)
        .join('');
      return `<div class="field"><label for="${esc(id)}">${esc(b.title)}${mark}</label>${desc}${err}
<select id="${esc(id)}" name="${name}"${aria}><option value="">Choose…</option>${opts}</select></div>`;
    }
    const kind = b.type === 'checkboxes' ? 'checkbox' : 'radio';
    const inputs = options
      .map(
        (o, i) =>
          `<label><input type="${kind}" name="${name}" value="${esc(o.value)}"${i === 0 ? ` id="${esc(id)}"` : ''}${chosen.has(o.value) ? ' checked' : ''}${error ? ' aria-invalid="true"' : ''}> ${esc(o.label)}</label>`,
      )
      .join('\n');
    const group = kind === 'radio' ? ` role="radiogroup"${b.required ? ' aria-required="true"' : ''}` : '';
    // The points of a rating or scale sit in one row of equal cells (a 0-10 scale included), wrapping evenly on phones.
    const scale = b.type === 'rating' || b.type === 'linear_scale';
    return `<fieldset class="field"${group}${describedBy ? ` aria-describedby="${esc(describedBy)}"` : ''}><legend>${esc(b.title)}${mark}</legend>${desc}${err}
${scale ? `<div class="scale">${inputs}</div>${ends ? scaleEnds(b, options) : ''}` : inputs}</fieldset>`;
  }

  const label = `<label for="${esc(id)}">${esc(b.title)}${mark}</label>`;
  if (b.type === 'long_text') {
    return `<div class="field">${label}${desc}${err}<textarea id="${esc(id)}" name="${name}" rows="5"${aria}>${esc(one)}</textarea></div>`;
  }
  const types: Record<string, string> = {
    short_text: 'text',
    email: 'email',
    url: 'url',
    phone: 'tel',
    number: 'number',
    date: 'date',
  };
  const extra =
    b.type === 'number'
      ? ` step="any"${b.min !== undefined ? ` min="${esc(b.min)}"` : ''}${b.max !== undefined ? ` max="${esc(b.max)}"` : ''} inputmode="decimal"`
      : b.type === 'email'
        ? ' autocomplete="email"'
        : b.type === 'phone'
          ? ' autocomplete="tel"'
          : '';
  return `<div class="field">${label}${desc}${err}<input type="${types[b.type] ?? 'text'}" id="${esc(id)}" name="${name}" value="${esc(one)}"${extra}${aria}></div>`;
}

/**
 * The end labels of a rating or scale (minLabel, maxLabel), drawn under its first and last points
 * and read with the question ("1: Not at all, 10: Very much", through aria-describedby).
 */
function scaleEnds(b: Block, options: Array<{ value: string }>): string {
  const first = options[0]?.value;
  const last = options[options.length - 1]?.value;
  const end = (value: string | undefined, label: string | undefined, align: string) =>
    label === undefined
      ? '<span></span>'
      : `<span style="text-align: ${align}"><span class="visually-hidden">${esc(value)}: </span>${esc(label)}</span>`;
  return `<p class="desc scale-ends" id="l-${esc(b.id)}" style="display: flex; justify-content: space-between; gap: 1rem">${end(first, b.minLabel, 'left')}${end(last, b.maxLabel, 'right')}</p>`;
}

/** Options of blocks answered by picking: choices, yes/no, and the points of a rating or scale. */
function choicesOf(b: Block): Array<{ value: string; label: string }> | undefined {
  if (b.choices) return b.choices.map((c) => ({ value: c.id, label: c.label }));
  if (b.type === 'yes_no')
    return [
      { value: 'true', label: 'Yes' },
      { value: 'false', label: 'No' },
    ];
  if (b.type === 'rating' || b.type === 'linear_scale') {
    const min = b.type === 'rating' ? 1 : (b.min ?? 1);
    const max = b.max ?? 5;
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
    if (b.type === 'checkboxes') {
      const list = (Array.isArray(value) ? value : [value]).filter((v) => v !== '');
      if (list.length) answers[b.id] = list;
      continue;
    }
    const text = Array.isArray(value) ? value[0] : value;
    if (text === undefined || text.trim() === '') continue;
    if (b.type === 'number' || b.type === 'rating' || b.type === 'linear_scale') {
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

export function thankYouPage(form: FormRecord): string {
  return page(
    `Thank you: ${form.title}`,
    `<h1>Thank you!</h1>
<p role="status">Your answers to “${esc(form.title)}” were received.</p>`,
  );
}

export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${esc(title)}</h1>\n<p>${esc(message)}</p>`);
}
