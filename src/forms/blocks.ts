import type { Plan } from '../common/access/roles';
import { ErrorDetail, pointerSegment } from '../common/errors/api-error';
import { newBlockId, newChoiceId } from '../common/ids';
import { closestKnownArgument, isStorableText } from '../common/validation/schema-validator';
import type { Condition } from './conditions';
import type { Calculation } from './compute/compute.types';

/**
 * Block types, their settings and their answers: the one place that knows what each type takes.
 * Used when a form is saved (settings), when a response arrives (answers, from the API and the
 * respondent page alike) and when answers are shown (choice ids back to labels).
 */
export const BLOCK_TYPES = [
  'short_text',
  'long_text',
  'email',
  'url',
  'phone',
  'number',
  'multiple_choice',
  'checkboxes',
  'dropdown',
  'rating',
  'linear_scale',
  'date',
  'yes_no',
  'statement',
  'page_break',
  'file_upload',
  'nps',
  'ranking',
  'matrix',
] as const;
export type BlockType = (typeof BLOCK_TYPES)[number];

export const CHOICE_TYPES: readonly BlockType[] = ['multiple_choice', 'checkboxes', 'dropdown'];
export const TEXT_TYPES: readonly BlockType[] = ['short_text', 'long_text', 'email', 'url', 'phone'];
export const NUMERIC_TYPES: readonly BlockType[] = ['number', 'rating', 'linear_scale', 'nps'];
/** Types answered by picking one integer of a fixed scale (scaleBounds), with optional end labels. */
export const SCALE_TYPES: readonly BlockType[] = ['rating', 'linear_scale', 'nps'];

/** A scale's ends: a rating runs from 1 to max (default 5), a linear scale from min (0 or 1) to max, an NPS from 0 to 10. */
export function scaleBounds(b: Pick<Block, 'type' | 'min' | 'max'>): { min: number; max: number } {
  if (b.type === 'nps') return { min: 0, max: 10 };
  return { min: b.type === 'rating' ? 1 : (b.min ?? 1), max: b.max ?? 5 };
}
/** Types that take no answer: a statement (text only) and a page_break (starts a page). */
export const NO_ANSWER_TYPES: readonly BlockType[] = ['statement', 'page_break'];
export const takesAnswer = (type: BlockType) => !NO_ANSWER_TYPES.includes(type);
/** Blocks answered with uploads (issue 35): file_upload (a signature block, issue 50, is to join it). */
export const isFileBlock = (b: Pick<Block, 'type'>) => b.type === 'file_upload';

/** A jump on a page_break: when `if` holds on leaving the page it closes, go to `to` (a later page_break's id) or "end". */
export interface Jump {
  if: Condition;
  to: string;
}

export interface Choice {
  id: string;
  label: string;
}

/** A block as stored and shown: common fields plus its type's settings. */
export interface Block {
  id: string;
  type: BlockType;
  title: string;
  description?: string | null;
  required: boolean;
  choices?: Choice[];
  min?: number;
  max?: number;
  /** Logic and refs (issue 25; see form-logic.ts): stored with the settings. */
  ref?: string;
  showIf?: Condition;
  jumps?: Jump[];
  minLabel?: string;
  maxLabel?: string;
  /** file_upload only (issue 35): how many files, each at most maxSizeMb, of the types in accept (none: any). */
  maxFiles?: number;
  maxSizeMb?: number;
  accept?: string[];
  /** Forms that compute (issue 46; see compute/): calculations, and a choice block's quiz points (by choice id) and correct choice(s). */
  calculate?: Calculation[];
  points?: Record<string, number>;
  correct?: string | string[];
  /** ranking only (issue 50): the answer ranks only the first rankTop choices (absent: all of them). */
  rankTop?: number;
  /** matrix only (issue 50): its rows and columns (ids kept by label, as choices), several columns per row when multiple. */
  rows?: Choice[];
  columns?: Choice[];
  multiple?: boolean;
}

/** A block as a caller sends it: choices may be plain labels, ids are optional. */
export interface BlockInput {
  id?: string;
  type: BlockType;
  /** Required, except on a page_break. */
  title?: string;
  description?: string | null;
  required?: boolean;
  choices?: Array<string | { id?: string; label: string }>;
  min?: number;
  max?: number;
  /** Checked by form-logic.ts (normalizeForm), which wraps normalizeBlocks. */
  ref?: string | null;
  showIf?: unknown;
  jumps?: Array<{ if: unknown; to: string }>;
  minLabel?: string;
  maxLabel?: string;
  maxFiles?: number;
  maxSizeMb?: number;
  accept?: string[];
  /** Checked by compute/check.ts (checkBlockCompute). */
  calculate?: Array<Record<string, unknown>> | Calculation[];
  points?: Record<string, unknown>;
  correct?: unknown;
  rankTop?: number;
  /** Labels (the schema's); stored blocks passed back carry { id, label }. */
  rows?: Array<string | { id?: string; label: string }>;
  columns?: Array<string | { id?: string; label: string }>;
  multiple?: boolean;
}

/** Settings each type accepts beyond id, type, title, description and required. */
const SETTINGS: Record<BlockType, readonly ('choices' | 'min' | 'max')[]> = {
  short_text: [],
  long_text: [],
  email: [],
  url: [],
  phone: [],
  number: ['min', 'max'],
  multiple_choice: ['choices'],
  checkboxes: ['choices'],
  dropdown: ['choices'],
  rating: ['max'],
  linear_scale: ['min', 'max'],
  date: [],
  yes_no: [],
  statement: [],
  page_break: [],
  file_upload: [],
  nps: [],
  ranking: ['choices'],
  matrix: [],
};

/**
 * Files (issue 35). The per-file limit of each plan, in MB (10^6 bytes): a block's maxSizeMb may
 * not exceed the largest, and an upload is held to the smaller of the block's and its plan's.
 */
export const FILE_SIZE_LIMIT_MB: Record<Plan, number> = { free: 10, pro: 100 };
const MAX_FILE_SIZE_MB = Math.max(...Object.values(FILE_SIZE_LIMIT_MB));
export const MAX_FILES = 10;
const FILE_SETTINGS = ['maxFiles', 'maxSizeMb', 'accept'] as const;
/** An accept entry: `type/subtype`, `type/*` or `.ext`, lowercase. */
const ACCEPT_ENTRY =
  /^(\.[a-z0-9][a-z0-9_-]{0,15}|[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/(\*|[a-z0-9][a-z0-9!#$&^_.+-]{0,126}))$/;
/** An upload id as answers carry it. */
export const UPLOAD_ID = /^upl_[0-9A-Za-z]{22}$/;

export const MAX_BLOCKS = 200;
/** Number answers stay within ±10^15: exact in a double, and sums of a million of them stay finite. */
export const MAX_NUMBER = 1e15;
export const MAX_CHOICES = 200;
/** A ranking puts 2 to 20 choices in order. */
export const MAX_RANKED = 20;
/** A matrix has 1 to 20 rows and 1 to 20 columns. */
export const MAX_MATRIX = 20;
const MAX_MATRIX_LABEL = 200;
const TEXT_LIMITS: Partial<Record<BlockType, number>> = {
  short_text: 1000,
  long_text: 10000,
  email: 320,
  url: 2048,
  phone: 40,
};

/**
 * Checks a block list against each type's rules and gives every block and choice its id
 * (kept when the caller sent one, new otherwise). `previous` holds the form's current blocks,
 * so an existing block keeps its choice ids when only labels are sent.
 */
export function normalizeBlocks(
  input: BlockInput[],
  previous: Block[] = [],
  basePath = '/blocks',
): { blocks: Block[]; details: ErrorDetail[] } {
  const details: ErrorDetail[] = [];
  const blocks: Block[] = [];
  const seenIds = new Set<string>();
  const previousById = new Map(previous.map((b) => [b.id, b]));
  if (input.length > MAX_BLOCKS) details.push({ path: basePath, message: `must have at most ${MAX_BLOCKS} blocks` });

  input.forEach((raw, index) => {
    const path = `${basePath}/${index}`;
    const bad = (field: string, message: string) => details.push({ path: field ? `${path}/${field}` : path, message });

    // Ids are Formwork's: an id names a block the form already has; a new block has none.
    let id = raw.id;
    if (id !== undefined) {
      if (!previousById.has(id))
        bad(
          'id',
          previous.length
            ? 'is not a block of this form; omit id to add a new block'
            : 'ids are assigned by Formwork; omit id',
        );
      else if (seenIds.has(id)) bad('id', 'is used by another block of this form');
    } else {
      id = newBlockId();
    }
    seenIds.add(id);

    for (const setting of ['choices', 'min', 'max'] as const) {
      if (raw[setting] !== undefined && !SETTINGS[raw.type].includes(setting)) {
        bad(setting, `is not a setting of ${raw.type} blocks${settingHint(raw.type, setting)}`);
      }
    }
    if (raw.rankTop !== undefined && raw.type !== 'ranking')
      bad('rankTop', `is not a setting of ${raw.type} blocks: rankTop goes on ranking blocks`);
    for (const setting of ['rows', 'columns', 'multiple'] as const) {
      if (raw[setting] !== undefined && raw.type !== 'matrix')
        bad(setting, `is not a setting of ${raw.type} blocks: ${setting} goes on matrix blocks`);
    }
    for (const setting of FILE_SETTINGS) {
      if (raw[setting] !== undefined && raw.type !== 'file_upload')
        bad(setting, `is not a setting of ${raw.type} blocks: ${setting} goes on file_upload blocks`);
    }
    if (raw.type === 'statement' && raw.required)
      bad('required', 'a statement takes no answer, so it cannot be required');
    if (raw.type === 'page_break' && raw.required)
      bad('required', 'a page_break takes no answer, so it cannot be required');
    if (raw.title === undefined && raw.type !== 'page_break') bad('title', 'is required');

    const block: Block = {
      id,
      type: raw.type,
      title: raw.title ?? '',
      description: raw.description ?? null,
      required: takesAnswer(raw.type) ? (raw.required ?? false) : false,
    };

    switch (raw.type) {
      case 'multiple_choice':
      case 'checkboxes':
      case 'dropdown': {
        const kept = previousById.get(id)?.choices ?? [];
        const choices = normalizeChoices(raw.choices, kept, `${path}/choices`, details);
        block.choices = choices;
        break;
      }
      case 'ranking': {
        const kept = previousById.get(id)?.choices ?? [];
        block.choices = normalizeChoices(raw.choices, kept, `${path}/choices`, details);
        const n = block.choices.length;
        if (raw.choices && (n < 2 || n > MAX_RANKED)) bad('choices', `a ranking takes 2 to ${MAX_RANKED} choices`);
        if (raw.rankTop !== undefined) {
          if (!Number.isInteger(raw.rankTop) || raw.rankTop < 1 || raw.rankTop > n)
            bad('rankTop', `must be an integer from 1 to the number of choices (${n})`);
          else if (raw.rankTop < n) block.rankTop = raw.rankTop;
        }
        break;
      }
      case 'matrix': {
        const kept = previousById.get(id);
        for (const side of ['rows', 'columns'] as const) {
          const labels = raw[side];
          if (!labels || labels.length > MAX_MATRIX) bad(side, `a matrix takes 1 to ${MAX_MATRIX} ${side} (labels)`);
          block[side] = normalizeChoices(labels?.slice(0, MAX_MATRIX), kept?.[side] ?? [], `${path}/${side}`, details);
          block[side].forEach((c, i) => {
            if (c.label.length > MAX_MATRIX_LABEL)
              bad(`${side}/${i}`, `must be at most ${MAX_MATRIX_LABEL} characters`);
          });
        }
        if (raw.multiple) block.multiple = true;
        break;
      }
      case 'number': {
        for (const bound of ['min', 'max'] as const) {
          if (raw[bound] !== undefined && Math.abs(raw[bound]!) > MAX_NUMBER)
            bad(bound, `must be between -${MAX_NUMBER} and ${MAX_NUMBER}`);
        }
        if (raw.min !== undefined) block.min = raw.min;
        if (raw.max !== undefined) block.max = raw.max;
        if (raw.min !== undefined && raw.max !== undefined && raw.min > raw.max)
          bad('max', 'must be greater than or equal to min');
        break;
      }
      case 'rating': {
        const max = raw.max ?? 5;
        if (!Number.isInteger(max) || max < 3 || max > 10) bad('max', 'must be an integer from 3 to 10');
        block.max = max;
        break;
      }
      case 'linear_scale': {
        const min = raw.min ?? 1;
        const max = raw.max ?? 5;
        if (min !== 0 && min !== 1) bad('min', 'must be 0 or 1');
        if (!Number.isInteger(max) || max < 2 || max > 10) bad('max', 'must be an integer from 2 to 10');
        block.min = min;
        block.max = max;
        break;
      }
      case 'file_upload': {
        Object.assign(block, normalizeFileSettings(raw, bad));
        break;
      }
      default:
        break;
    }
    blocks.push(block);
  });
  return { blocks, details };
}

/** A file_upload block's settings with their defaults (1 file, 10 MB, any type). */
function normalizeFileSettings(
  raw: BlockInput,
  bad: (field: string, message: string) => void,
): Pick<Block, 'maxFiles' | 'maxSizeMb' | 'accept'> {
  const maxFiles = raw.maxFiles ?? 1;
  const maxSizeMb = raw.maxSizeMb ?? FILE_SIZE_LIMIT_MB.free;
  if (!Number.isInteger(maxFiles) || maxFiles < 1 || maxFiles > MAX_FILES)
    bad('maxFiles', `must be an integer from 1 to ${MAX_FILES}`);
  if (!Number.isInteger(maxSizeMb) || maxSizeMb < 1 || maxSizeMb > MAX_FILE_SIZE_MB)
    bad(
      'maxSizeMb',
      `must be an integer from 1 to ${MAX_FILE_SIZE_MB} (per file; the plan's limit applies: Free ${FILE_SIZE_LIMIT_MB.free}, Pro ${FILE_SIZE_LIMIT_MB.pro})`,
    );
  const accept = (raw.accept ?? []).map((a) => a.trim().toLowerCase());
  accept.forEach((a, i) => {
    if (!ACCEPT_ENTRY.test(a))
      bad(`accept/${i}`, 'must be a MIME type ("application/pdf"), a wildcard ("image/*") or an extension (".docx")');
  });
  return { maxFiles, maxSizeMb, ...(accept.length ? { accept: [...new Set(accept)] } : {}) };
}

/** Where a setting sent to a type that does not take it belongs (appended to the detail). */
function settingHint(type: BlockType, setting: 'choices' | 'min' | 'max'): string {
  if (type === 'rating' && setting === 'min')
    return ': a rating runs from 1 to its max (3 to 10, default 5); for a scale from 0, use linear_scale';
  if (type === 'nps') return ': an nps always runs from 0 to 10';
  if (setting === 'choices') return ': choices go on multiple_choice, checkboxes, dropdown and ranking blocks';
  const takes = SETTINGS[type].filter((s) => s !== 'choices');
  return takes.length
    ? `: ${type} takes ${takes.join(' and ')}`
    : ': min and max go on number, rating (max only) and linear_scale blocks';
}

function normalizeChoices(raw: BlockInput['choices'], kept: Choice[], path: string, details: ErrorDetail[]): Choice[] {
  if (!raw || raw.length === 0) {
    details.push({ path, message: 'must list at least one choice' });
    return [];
  }
  if (raw.length > MAX_CHOICES) details.push({ path, message: `must have at most ${MAX_CHOICES} choices` });
  const keptByLabel = new Map(kept.map((c) => [c.label, c]));
  // Ids the caller names explicitly are theirs; a bare label only takes an old id nobody claimed.
  const claimed = new Set(raw.flatMap((e) => (typeof e !== 'string' && e.id ? [e.id] : [])));
  const labels = new Set<string>();
  const ids = new Set<string>();
  return raw.map((entry, i) => {
    const label = (typeof entry === 'string' ? entry : entry.label).trim();
    // A bare label that matches an existing choice keeps that choice's id (and its answers).
    const keptId = keptByLabel.get(label)?.id;
    const id =
      (typeof entry === 'string' ? undefined : entry.id) ??
      (keptId && !claimed.has(keptId) ? keptId : undefined) ??
      newChoiceId();
    if (typeof entry !== 'string' && entry.id !== undefined && !kept.some((c) => c.id === entry.id)) {
      details.push({ path: `${path}/${i}/id`, message: 'is not a choice of this block; omit id to add a new choice' });
    }
    if (label === '') details.push({ path: `${path}/${i}`, message: 'a choice label must not be empty' });
    if (labels.has(label))
      details.push({ path: `${path}/${i}`, message: `the label "${label}" appears twice in this block` });
    if (ids.has(id)) details.push({ path: `${path}/${i}/id`, message: 'is used by another choice of this block' });
    labels.add(label);
    ids.add(id);
    return { id, label };
  });
}

/**
 * A block in the API's shape: id, its ref where it has one, the common fields (a page break shows
 * a title only when it has one), then its settings. Rules and end labels are added by blocksView.
 */
export function blockView(b: Block): Record<string, unknown> {
  const view: Record<string, unknown> = b.ref ? { id: b.id, ref: b.ref, type: b.type } : { id: b.id, type: b.type };
  if (b.type !== 'page_break' || b.title) view.title = b.title;
  if (b.description) view.description = b.description;
  view.required = b.required;
  if (b.choices) view.choices = b.choices;
  if (b.rankTop !== undefined) view.rankTop = b.rankTop;
  if (b.rows) view.rows = b.rows.map((r) => r.label);
  if (b.columns) view.columns = b.columns.map((c) => c.label);
  if (b.type === 'matrix') view.multiple = b.multiple ?? false;
  if (b.min !== undefined) view.min = b.min;
  if (b.max !== undefined) view.max = b.max;
  if (b.type === 'file_upload') {
    view.maxFiles = b.maxFiles ?? 1;
    view.maxSizeMb = b.maxSizeMb ?? FILE_SIZE_LIMIT_MB.free;
    if (b.accept) view.accept = b.accept;
  }
  return view;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const PHONE = /^\+?[0-9(][0-9 ()\-.]{3,38}[0-9]$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

export function isBlank(value: unknown): boolean {
  return (
    value === undefined ||
    value === null ||
    (typeof value === 'string' && value.trim() === '') ||
    (Array.isArray(value) && value.length === 0)
  );
}

/**
 * Who reads the messages of refused answers: an API caller ('api': terse, like a schema validator's,
 * naming types and formats) or the person filling in the respondent page ('person': one sentence
 * saying what to enter, written to stand on its own beside the question).
 */
export type AnswerWording = 'api' | 'person';

/** Why an answer is refused, in both wordings; `hint`, for an API caller, the likely fix (the error's hint). */
export interface Refusal {
  api: string;
  person: string;
  hint?: string;
  /** A part of the answer the refusal is about (a matrix's row): the path goes on to it. */
  at?: string;
}

/** A number as people write it: 1,000 not 1000, 2.5 as is. */
function readable(n: number): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: 20 });
}

/**
 * Validates an answer set against a form's blocks. Returns the answers as stored (choice answers
 * by choice id, blanks dropped) or the details of every bad answer, worded for `wording`'s reader,
 * and the first refusal's hint; the caller stores nothing when there are details. `unknownKey`
 * says why a key names no block (validateResponse points at a hidden field or a misspelt ref).
 */
export function validateAnswers(
  blocks: Block[],
  answers: Record<string, unknown>,
  basePath = '/answers',
  wording: AnswerWording = 'api',
  unknownKey: (key: string) => Refusal = () => ({
    api: 'this form has no block with this id',
    person: 'This form has no question with this id.',
  }),
): { stored: Record<string, unknown>; details: ErrorDetail[]; hint?: string } {
  const details: ErrorDetail[] = [];
  const stored: Record<string, unknown> = {};
  const byId = blocksById(blocks);
  let hint: string | undefined;
  const refuse = (key: string, why: Refusal) => {
    // The page shows a refusal at its question (a matrix's, not its row's): the path goes on for API callers.
    const at = why.at === undefined || wording === 'person' ? '' : `/${pointerSegment(why.at)}`;
    details.push({ path: `${basePath}/${pointerSegment(key)}${at}`, message: why[wording] });
    if (wording === 'api') hint ??= why.hint;
  };

  for (const key of Object.keys(answers)) {
    const block = byId.get(key);
    if (!block) refuse(key, unknownKey(key));
    else if (!takesAnswer(block.type) && !isBlank(answers[key]))
      refuse(key, { api: 'a statement block takes no answer', person: 'This part of the form takes no answer.' });
  }

  for (const block of blocks) {
    if (!takesAnswer(block.type)) continue;
    const value = answers[block.id];
    if (isBlank(value)) {
      if (block.required) refuse(block.id, { api: 'is required', person: 'This question needs an answer.' });
      continue;
    }
    const result = checkAnswer(block, value);
    if ('value' in result) stored[block.id] = result.value;
    else refuse(block.id, result);
  }
  return { stored, details, ...(hint ? { hint } : {}) };
}

/** One answer: its stored value, or why it is refused. */
function checkAnswer(block: Block, value: unknown): { value: unknown } | Refusal {
  switch (block.type) {
    case 'short_text':
    case 'long_text':
    case 'email':
    case 'url':
    case 'phone': {
      if (typeof value !== 'string')
        return {
          api: typeof value === 'number' ? `must be a string (send "${value}")` : 'must be a string',
          person: 'Enter your answer as text.',
        };
      if (!isStorableText(value))
        return {
          api: 'must be well-formed text (no NUL character, no lone surrogate)',
          person: 'Remove the invisible control characters from your answer.',
        };
      const text = block.type === 'long_text' ? value : value.trim();
      const limit = TEXT_LIMITS[block.type]!;
      if (text.length > limit)
        return {
          api: `must be at most ${limit} characters`,
          person: `Shorten your answer to ${readable(limit)} characters or fewer.`,
        };
      if (block.type === 'email' && !EMAIL.test(text))
        return { api: 'must be an email address', person: 'Enter an email address, like name@example.com.' };
      if (block.type === 'url' && !isHttpUrl(text))
        return { api: 'must be an http(s) URL', person: 'Enter a web address starting with http:// or https://.' };
      if (block.type === 'phone' && !PHONE.test(text))
        return {
          api: 'must be a phone number (digits, spaces, +, -, parentheses)',
          person: 'Enter a phone number using digits, spaces, +, - or brackets.',
        };
      return { value: text };
    }
    case 'number': {
      const range = numberRange(block.min, block.max);
      if (typeof value !== 'number' || !Number.isFinite(value))
        return {
          api: `must be a number${quotedNumber(value)}`,
          person: range ? `Enter a number ${range}.` : 'Enter a number.',
        };
      if (Math.abs(value) > MAX_NUMBER)
        return {
          api: `must be between -${MAX_NUMBER} and ${MAX_NUMBER}`,
          person: `Enter a number ${range ?? `between -${readable(MAX_NUMBER)} and ${readable(MAX_NUMBER)}`}.`,
        };
      if (block.min !== undefined && value < block.min)
        return { api: `must be at least ${block.min}`, person: `Enter a number ${range}.` };
      if (block.max !== undefined && value > block.max)
        return { api: `must be at most ${block.max}`, person: `Enter a number ${range}.` };
      return { value };
    }
    case 'rating':
    case 'linear_scale':
    case 'nps': {
      const { min, max } = scaleBounds(block);
      if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
        return {
          api: `must be an integer from ${min} to ${max}${
            block.type === 'rating' && typeof value === 'number'
              ? ` (this rating runs from 1 to its max, ${max})`
              : quotedNumber(value)
          }`,
          person: `Choose a number from ${min} to ${max}.`,
        };
      return { value };
    }
    case 'multiple_choice':
    case 'dropdown': {
      const person = 'Choose one of the options.';
      if (Array.isArray(value))
        return {
          api: `takes one choice, not a list (only checkboxes take a list)${value.length === 1 && typeof value[0] === 'string' ? `: send ${JSON.stringify(value[0])}` : ''}`,
          person,
        };
      if (typeof value !== 'string') return { api: 'must be one choice label (or choice id)', person };
      const choice = findChoice(block, value);
      return choice
        ? { value: choice.id }
        : { api: `must be one of ${choiceList(block)}${meantChoice(block, value)}`, person };
    }
    case 'checkboxes': {
      const person = 'Choose only from the options listed.';
      if (typeof value === 'string')
        return { api: `must be a list of choice labels (or choice ids): send [${JSON.stringify(value)}]`, person };
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
        return { api: 'must be a list of choice labels (or choice ids)', person };
      const ids: string[] = [];
      for (const v of value as string[]) {
        const choice = findChoice(block, v);
        if (!choice) return { api: `"${v}" is not one of ${choiceList(block)}${meantChoice(block, v)}`, person };
        if (ids.includes(choice.id)) return { api: `"${v}" is chosen twice`, person: 'Choose each option only once.' };
        ids.push(choice.id);
      }
      return { value: ids };
    }
    case 'date': {
      const format = { api: 'must be a date (YYYY-MM-DD)', person: 'Enter a date as year-month-day, like 2026-03-31.' };
      if (typeof value !== 'string') return format;
      const m = DATE.exec(value);
      if (!m) {
        const day = /^(\d{4}-\d{2}-\d{2})[T ]/.exec(value);
        return day ? { ...format, api: `must be a date (YYYY-MM-DD) without a time: send "${day[1]}"` } : format;
      }
      const d = new Date(0);
      d.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3])); // Date.UTC would read 0099 as 1999
      if (
        d.getUTCFullYear() !== Number(m[1]) ||
        d.getUTCMonth() !== Number(m[2]) - 1 ||
        d.getUTCDate() !== Number(m[3])
      )
        return { api: 'is not a real date', person: 'Enter a date that exists on the calendar.' };
      return { value };
    }
    case 'yes_no':
      if (typeof value !== 'boolean')
        return {
          api:
            typeof value === 'string' || typeof value === 'number'
              ? `must be true or false (JSON booleans, not ${JSON.stringify(value)})`
              : 'must be true or false',
          person: 'Choose Yes or No.',
        };
      return { value };
    case 'file_upload':
      return checkUploadIds(block, value);
    case 'ranking':
      return checkRanking(block, value);
    case 'matrix':
      return checkMatrix(block, value);
    default:
      return { api: 'takes no answer', person: 'This part of the form takes no answer.' };
  }
}

/**
 * A file_upload answer's shape: upload ids (a single id when maxFiles is 1), stored as a list.
 * Whether each upload exists, fits the block and is free is checked by UploadsService.attach.
 */
function checkUploadIds(block: Block, value: unknown): { value: unknown } | Refusal {
  const maxFiles = block.maxFiles ?? 1;
  const ids = typeof value === 'string' && maxFiles === 1 ? [value] : value;
  const shape = maxFiles === 1 ? 'an upload id ("upl_...") or a list of one' : `a list of upload ids ("upl_...")`;
  const hint = 'Make each file with create_upload, PUT its bytes to the url it gives, then send its uploadId here.';
  if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string' || !UPLOAD_ID.test(id))) {
    // Shaped like ids, but one is not an id create_upload makes (a made-up "upl_doesnotexist123").
    if (Array.isArray(ids) && ids.every((id) => typeof id === 'string' && /^upl_[0-9A-Za-z]{1,64}$/.test(id)))
      return {
        api: `no such upload exists: ${ids.find((id) => !UPLOAD_ID.test(id))}`,
        person: 'Choose the file again.',
        hint,
      };
    return { api: `must be ${shape} from create_upload`, person: 'Choose the file again.', hint };
  }
  if (ids.length > maxFiles)
    return {
      api: `takes at most ${maxFiles} file${maxFiles === 1 ? '' : 's'}`,
      person: `Choose at most ${maxFiles} file${maxFiles === 1 ? '' : 's'}.`,
    };
  if (new Set(ids).size !== ids.length)
    return { api: 'names the same upload twice', person: 'Choose each file only once.' };
  return { value: ids };
}

/**
 * A ranking's answer: its choices (labels or ids) in order, best first: every choice, or the first
 * rankTop. Stored as choice ids. The page sends a choice twice when two were given the same place.
 */
function checkRanking(block: Block, value: unknown): { value: unknown } | Refusal {
  const choices = block.choices ?? [];
  const want = block.rankTop ?? choices.length;
  const what = block.rankTop ? `the ${want} first of ${choiceList(block)}` : `all of ${choiceList(block)}`;
  const person = block.rankTop ? `Rank your top ${want}, each with its own place.` : 'Give each option its own place.';
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
    return { api: `must be a list of choice labels (or ids) in order, best first: ${what}`, person };
  const ids: string[] = [];
  for (const v of value as string[]) {
    const choice = findChoice(block, v);
    if (!choice) return { api: `"${v}" is not one of ${choiceList(block)}${meantChoice(block, v)}`, person };
    if (ids.includes(choice.id)) return { api: `"${v}" is ranked twice`, person };
    ids.push(choice.id);
  }
  if (ids.length !== want) return { api: `must rank ${what} (got ${ids.length})`, person };
  return { value: ids };
}

/**
 * A matrix answer: an object from row (label or id) to column (label or id; a list of them when
 * multiple), stored by ids. Required means every row. A refusal about one row names it (at).
 */
function checkMatrix(block: Block, value: unknown): { value: unknown } | Refusal {
  const rows = block.rows ?? [];
  const columns = block.columns ?? [];
  const labels = (list: Choice[]) => list.map((c) => JSON.stringify(c.label)).join(', ');
  const find = (list: Choice[], v: string) =>
    list.find((c) => c.id === v.trim()) ?? list.find((c) => c.label === v.trim());
  const person = block.multiple ? 'Choose from the options in each row.' : 'Choose one option in each row.';
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { api: `must be an object from row to column: rows ${labels(rows)}; columns ${labels(columns)}`, person };
  const stored: Record<string, string | string[]> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    const row = find(rows, key);
    if (!row) return { api: `is not a row of this matrix: rows are ${labels(rows)}`, person, at: key };
    if (isBlank(v)) continue;
    const picked = Array.isArray(v) ? v : [v];
    if (!block.multiple && Array.isArray(v))
      return {
        api: 'takes one column (this matrix is not multiple)',
        person: 'Choose one option in this row.',
        at: key,
      };
    const ids: string[] = [];
    for (const p of picked) {
      const column = typeof p === 'string' ? find(columns, p) : undefined;
      if (!column) return { api: `must be one of the columns ${labels(columns)}`, person, at: key };
      if (!ids.includes(column.id)) ids.push(column.id);
    }
    stored[row.id] = block.multiple ? ids : ids[0];
  }
  if (block.required) {
    const missing = rows.find((r) => stored[r.id] === undefined);
    if (missing)
      return { api: 'is required: every row needs an answer', person: 'Answer every row.', at: missing.label };
  }
  return Object.keys(stored).length ? { value: stored } : { api: 'answers no row', person };
}

/** A number block's bounds for people ("from 1 to 5", "no greater than 5"), undefined without bounds. */
function numberRange(min: number | undefined, max: number | undefined): string | undefined {
  if (min !== undefined && max !== undefined) return `from ${readable(min)} to ${readable(max)}`;
  if (min !== undefined) return `no less than ${readable(min)}`;
  if (max !== undefined) return `no greater than ${readable(max)}`;
  return undefined;
}

/** For a number sent as a string ("4"), what to send instead; '' otherwise. */
function quotedNumber(value: unknown): string {
  return typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))
    ? ` (send ${Number(value)}, not ${JSON.stringify(value)})`
    : '';
}

/** "; did you mean "Yes"?" when a label differs from one of the block's only by case, spacing or a typo. */
function meantChoice(block: Block, value: string): string {
  const labels = (block.choices ?? []).map((c) => c.label);
  const meant = closestKnownArgument(value, labels);
  return meant === undefined ? '' : `; did you mean ${JSON.stringify(meant)}?`;
}

function findChoice(block: Block, value: string): Choice | undefined {
  const wanted = value.trim();
  return block.choices?.find((c) => c.id === wanted) ?? block.choices?.find((c) => c.label === wanted);
}

function choiceList(block: Block): string {
  return (block.choices ?? []).map((c) => JSON.stringify(c.label)).join(', ');
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * Shows stored answers to callers: choice ids back to their current labels. Built once per form
 * (a page shows up to 200 responses of the same form).
 */
export function answersViewer(blocks: Block[]): (stored: Record<string, unknown>) => Record<string, unknown> {
  let viewer = viewers.get(blocks);
  if (!viewer) {
    viewer = newAnswersViewer(blocks);
    viewers.set(blocks, viewer);
  }
  return viewer;
}

/**
 * What is made from a form's blocks for every submission or page of responses, made once per
 * blocks array: a form as read (FormsService keeps the recent ones) serves many calls, and its
 * blocks are never changed once read.
 */
const byIdCache = new WeakMap<Block[], Map<string, Block>>();
const viewers = new WeakMap<Block[], (stored: Record<string, unknown>) => Record<string, unknown>>();

function blocksById(blocks: Block[]): Map<string, Block> {
  let byId = byIdCache.get(blocks);
  if (!byId) {
    byId = new Map(blocks.map((b) => [b.id, b]));
    byIdCache.set(blocks, byId);
  }
  return byId;
}

function newAnswersViewer(blocks: Block[]): (stored: Record<string, unknown>) => Record<string, unknown> {
  const byId = new Map(
    blocks.map((b) => [b.id, { block: b, labels: new Map((b.choices ?? []).map((c) => [c.id, c.label])) }]),
  );
  return (stored) => {
    const out: Record<string, unknown> = {};
    for (const [blockId, value] of Object.entries(stored)) {
      const entry = byId.get(blockId);
      if (!entry) continue; // the block was removed (its loss accepted)
      const { block, labels } = entry;
      if (block.type === 'multiple_choice' || block.type === 'dropdown') {
        const label = labels.get(value as string);
        if (label !== undefined) out[blockId] = label;
      } else if ((block.type === 'checkboxes' || block.type === 'ranking') && Array.isArray(value)) {
        out[blockId] = value.map((id) => labels.get(id)).filter((l): l is string => l !== undefined);
      } else if (block.type === 'matrix') {
        out[blockId] = matrixView(block, value);
      } else {
        out[blockId] = value;
      }
    }
    return out;
  };
}

/** A matrix answer as shown: row label -> column label (labels, when multiple); removed rows and columns left out. */
export function matrixView(block: Block, value: unknown): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (typeof value !== 'object' || value === null) return out;
  const columns = new Map((block.columns ?? []).map((c) => [c.id, c.label]));
  for (const row of block.rows ?? []) {
    const v = (value as Record<string, unknown>)[row.id];
    if (v === undefined) continue;
    const picked = (Array.isArray(v) ? v : [v]).map((id) => columns.get(String(id))).filter((l) => l !== undefined);
    if (picked.length) out[row.label] = block.multiple ? picked : picked[0];
  }
  return out;
}

export function answersView(blocks: Block[], stored: Record<string, unknown>): Record<string, unknown> {
  return answersViewer(blocks)(stored);
}
