import { ErrorDetail } from '../../common/errors/api-error';
import { closestKnownArgument } from '../../common/validation/schema-validator';
import type { Block, BlockInput } from '../blocks';
import { CHOICE_TYPES, NUMERIC_TYPES, takesAnswer } from '../blocks';
import { checkCondition, Subjects } from '../conditions';
import {
  CALCULATION_OPS,
  Calculation,
  CalculationOp,
  Ending,
  MAX_TEXT_VARIABLE,
  Operand,
  QUIZ_VARIABLES,
  ThankYou,
  Variable,
  VARIABLE_TYPES,
} from './compute.types';
import { recallTokens } from './recall';

/** What a form's computing settings are checked against: its blocks (checked), variables and hidden fields. */
export interface ComputeContext {
  blocks: Block[];
  /** Declared variables and, on a quiz, the built-ins. */
  variables: Variable[];
  hiddenFields: string[];
  /** A block's index by id or ref. */
  indexOf: Map<string, number>;
  /** The index of the first block that changes each variable (its calculations, or points/correct for score). */
  changedAt: Map<string, number>;
}

const didYouMean = (name: string, known: string[]) => {
  const meant = closestKnownArgument(name, known);
  return meant === undefined ? '' : `; did you mean "${meant}"?`;
};

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const NAME = /^[a-z][a-z0-9_]{0,63}$/;
const nameProblem = (x: unknown) =>
  typeof x !== 'string' || !NAME.test(x) || x.startsWith('b_')
    ? 'must be a name like a ref: lower-case letters, digits and _, starting with a letter (not b_)'
    : undefined;

/** Fields of an object sent that it does not take, as details; undefined when `x` is not an object (a detail too). */
function shapeProblems(x: unknown, fields: string[], path: string, what: string): ErrorDetail[] {
  if (!isObject(x)) return [{ path, message: `must be an object: ${what}` }];
  return Object.keys(x)
    .filter((k) => !fields.includes(k))
    .map((k) => {
      const meant = closestKnownArgument(k, fields);
      return { path: `${path}/${k}`, message: `is not a field of ${what}${meant ? `; did you mean "${meant}"?` : ''}` };
    });
}

/** A text field: undefined (when optional) or a string of minLength..maxLength characters. */
function textProblem(x: unknown, min: number, max: number, optional: boolean): string | undefined {
  if (x === undefined) return optional ? undefined : 'is required';
  if (typeof x !== 'string') return 'must be a string';
  if (x.length < min) return `must have at least ${min} character`;
  if (x.length > max) return `must be at most ${max} characters`;
  return undefined;
}

/** Whether a block's raw input makes the form a quiz. */
export const isQuizBlock = (b: { points?: unknown; correct?: unknown }) =>
  b.points !== undefined || b.correct !== undefined;

/**
 * `variables` as saved: names like refs, unique, not a block's ref or a hidden field's name (the
 * names share one namespace), a type and an initial value of that type. With `quiz`, score (unless
 * declared, as a number) and correctCount are added.
 */
export function checkVariables(
  input: Array<Record<string, unknown>> | Variable[] | undefined,
  taken: Map<string, string>,
  quiz: boolean,
  path = '/variables',
): { declared: Variable[]; variables: Variable[]; details: ErrorDetail[] } {
  const details: ErrorDetail[] = [];
  const declared: Variable[] = [];
  const seen = new Set<string>();
  const list = (input ?? []) as Array<Record<string, unknown>>;
  list.forEach((raw, i) => {
    const at = `${path}/${i}`;
    const shape = shapeProblems(raw, ['name', 'type', 'initial'], at, '{ name, type, initial? }');
    if (shape.length) return void details.push(...shape);
    const problem = nameProblem(raw.name);
    if (problem) return void details.push({ path: `${at}/name`, message: problem });
    if (!(VARIABLE_TYPES as readonly unknown[]).includes(raw.type))
      return void details.push({ path: `${at}/type`, message: 'must be "number" or "text"' });
    const v = raw as unknown as Variable;
    if (seen.has(v.name)) details.push({ path: `${at}/name`, message: `"${v.name}" appears twice` });
    else if (taken.has(v.name))
      details.push({
        path: `${at}/name`,
        message: `"${v.name}" is already ${taken.get(v.name)}: names of refs, hidden fields and variables are shared`,
      });
    else if (v.name === 'correctCount')
      details.push({ path: `${at}/name`, message: 'correctCount is a built-in variable of quizzes' });
    seen.add(v.name);
    const type = v.type;
    const initial = v.initial ?? (type === 'number' ? 0 : '');
    if (type === 'number' && (typeof initial !== 'number' || !Number.isFinite(initial)))
      details.push({ path: `${at}/initial`, message: 'must be a number (a number variable)' });
    else if (type === 'text' && typeof initial !== 'string')
      details.push({ path: `${at}/initial`, message: 'must be text (a text variable)' });
    else if (typeof initial === 'string' && initial.length > MAX_TEXT_VARIABLE)
      details.push({ path: `${at}/initial`, message: `must be at most ${MAX_TEXT_VARIABLE} characters` });
    else declared.push({ name: v.name, type, initial: initial as number | string });
  });
  const variables = [...declared];
  if (quiz) {
    const score = declared.find((v) => v.name === 'score');
    if (score && score.type !== 'number')
      details.push({
        path: `${path}/${list.findIndex((v) => v.name === 'score')}/type`,
        message: 'score is the built-in score of this quiz (its blocks have points or correct): it must be a number',
      });
    if (!score) variables.push({ name: 'score', type: 'number', initial: 0 });
    variables.push({ name: 'correctCount', type: 'number', initial: 0 });
  }
  return { declared, variables, details };
}

/** `endings` as saved: refs unique, texts' recall checked, redirects http(s). */
export function checkEndings(
  input: Array<Record<string, unknown>> | Ending[] | undefined,
  ctx: ComputeContext,
  path = '/endings',
): { endings: Ending[]; details: ErrorDetail[] } {
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  const end = ctx.blocks.length;
  const endings = ((input ?? []) as Array<Record<string, unknown>>).flatMap((raw, i) => {
    const at = `${path}/${i}`;
    const shape = shapeProblems(
      raw,
      ['ref', 'title', 'message', 'redirectUrl'],
      at,
      '{ ref, title, message?, redirectUrl? }',
    );
    const fields: Array<[string, string | undefined]> = [
      ['ref', nameProblem(raw.ref)],
      ['title', textProblem(raw.title, 1, 500, false)],
      ['message', textProblem(raw.message, 0, 5000, true)],
      ['redirectUrl', textProblem(raw.redirectUrl, 1, 2000, true)],
    ];
    const problems = [...shape, ...fields.flatMap(([k, m]) => (m ? [{ path: `${at}/${k}`, message: m }] : []))];
    if (problems.length) {
      details.push(...problems);
      return [];
    }
    const e = raw as unknown as Ending;
    if (seen.has(e.ref)) details.push({ path: `${at}/ref`, message: `"${e.ref}" is the ref of another ending` });
    seen.add(e.ref);
    details.push(...checkRecall(e.title, `${at}/title`, ctx, end));
    if (e.message !== undefined) details.push(...checkRecall(e.message, `${at}/message`, ctx, end));
    if (e.redirectUrl !== undefined) {
      details.push(...checkRecall(e.redirectUrl, `${at}/redirectUrl`, ctx, end));
      const problem = redirectProblem(e.redirectUrl);
      if (problem) details.push({ path: `${at}/redirectUrl`, message: problem });
    }
    return [
      {
        ref: e.ref,
        title: e.title,
        ...(e.message ? { message: e.message } : {}),
        ...(e.redirectUrl ? { redirectUrl: e.redirectUrl } : {}),
      },
    ];
  });
  return { endings, details };
}

/** The thank-you page's texts, recall checked; undefined when it sets none. */
export function checkThankYou(
  input: Record<string, unknown> | ThankYou | undefined,
  ctx: ComputeContext,
  path = '/thankYou',
): { thankYou?: ThankYou; details: ErrorDetail[] } {
  if (input === undefined) return { details: [] };
  const shape = shapeProblems(input, ['title', 'message'], path, '{ title?, message? }');
  if (shape.length) return { details: shape };
  const raw = input as Record<string, unknown>;
  const details: ErrorDetail[] = [];
  const thankYou: ThankYou = {};
  for (const [k, min, max] of [
    ['title', 1, 500],
    ['message', 0, 5000],
  ] as const) {
    const problem = textProblem(raw[k], min, max, true);
    if (problem) details.push({ path: `${path}/${k}`, message: problem });
    else if (typeof raw[k] === 'string') {
      thankYou[k] = raw[k];
      details.push(...checkRecall(raw[k], `${path}/${k}`, ctx, ctx.blocks.length));
    }
  }
  return { thankYou: Object.keys(thankYou).length ? thankYou : undefined, details };
}

function redirectProblem(url: string): string | undefined {
  // Recall only after the host (issue 46): a value must not choose where the person is sent.
  const at = url.indexOf('{{');
  if (at >= 0 && !/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#\\{]+[/?#]/.test(url.slice(0, at)))
    return 'recalls in its scheme, host or port: recall may appear only in the path, query or fragment';
  let parsed: URL;
  try {
    parsed = new URL(url.replace(/\{\{[^}]*\}\}/g, 'x'));
  } catch {
    return 'must be an absolute http(s) URL';
  }
  return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? undefined : 'must be an http(s) URL';
}

/** The first block that changes each variable, from the blocks as sent (calculate's targets; points and correct: score, correctCount). */
export function firstChanges(input: BlockInput[]): Map<string, number> {
  const at = new Map<string, number>();
  input.forEach((b, i) => {
    const names = [
      ...(Array.isArray(b.calculate)
        ? (b.calculate as unknown[]).map((c) => (isObject(c) ? c.variable : undefined))
        : []),
      ...(isQuizBlock(b) ? QUIZ_VARIABLES : []),
    ];
    for (const n of names) if (typeof n === 'string' && !at.has(n)) at.set(n, i);
  });
  return at;
}

/**
 * What a condition at block `at` may name of the variables: for showIf and jumps (`anyTime`
 * false), a variable only after a block that changes it; in a calculation, any variable.
 */
export function variableSubject(ctx: ComputeContext, at: number, anyTime: boolean): Subjects['variable'] {
  return (name) => {
    const v = ctx.variables.find((x) => x.name === name);
    if (!v)
      return {
        error: `is not a variable of this form${didYouMean(
          name,
          ctx.variables.map((x) => x.name),
        )} (declare it in variables)`,
      };
    const changed = ctx.changedAt.get(name);
    if (!anyTime && (changed === undefined || changed >= at))
      return {
        error: `"${name}" is not changed by any block before this rule; a condition may name a variable only after a block that changes it`,
      };
    return { type: v.type };
  };
}

/**
 * A block's calculate, points and correct as saved (on `block`, stored by id), checked at `path`.
 * `subjects` are what a calculation's `if` may name: this block and those before it.
 */
export function checkBlockCompute(
  raw: BlockInput,
  block: Block,
  at: number,
  path: string,
  ctx: ComputeContext,
  subjects: Subjects,
): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const bad = (p: string, message: string) => details.push({ path: p, message });
  const what = `${block.type} blocks`;
  if (raw.points !== undefined || raw.correct !== undefined) {
    if (!CHOICE_TYPES.includes(block.type)) {
      bad(
        `${path}/${raw.points !== undefined ? 'points' : 'correct'}`,
        `only choice blocks take points and correct, not ${what}`,
      );
    } else {
      const choices = block.choices ?? [];
      const choiceOf = (key: string) =>
        choices.find((c) => c.id === key) ?? choices.find((c) => c.label === key.trim());
      const unknown = (p: string, key: string) =>
        bad(
          p,
          `"${key}" is not a choice of this block${didYouMean(
            key,
            choices.map((c) => c.label),
          )}`,
        );
      if (raw.points !== undefined && !isObject(raw.points)) bad(`${path}/points`, 'must be { choice: points }');
      else if (raw.points !== undefined) {
        const points: Record<string, number> = {};
        for (const [key, n] of Object.entries(raw.points)) {
          const c = choiceOf(key);
          if (!c) unknown(`${path}/points/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, key);
          else if (typeof n !== 'number' || !Number.isFinite(n)) bad(`${path}/points`, 'points must be numbers');
          else points[c.id] = n;
        }
        block.points = points;
      }
      const correct = raw.correct;
      if (
        correct !== undefined &&
        !(typeof correct === 'string' || (Array.isArray(correct) && correct.every((c) => typeof c === 'string')))
      )
        bad(`${path}/correct`, 'must be a choice (label or id), or a list of them on checkboxes');
      else if (correct !== undefined) {
        const list = (Array.isArray(correct) ? correct : [correct]) as string[];
        if (block.type !== 'checkboxes' && list.length !== 1)
          bad(`${path}/correct`, `${block.type} has one correct choice`);
        const ids: string[] = [];
        list.forEach((key, k) => {
          const c = choiceOf(key);
          if (!c) unknown(Array.isArray(correct) ? `${path}/correct/${k}` : `${path}/correct`, key);
          else ids.push(c.id);
        });
        block.correct = block.type === 'checkboxes' ? ids : ids[0];
      }
    }
  }
  if (raw.calculate === undefined) return details;
  if (!Array.isArray(raw.calculate)) {
    bad(`${path}/calculate`, 'must be a list of calculations');
    return details;
  }
  if (!takesAnswer(block.type)) {
    bad(`${path}/calculate`, `a ${block.type} takes no answer, so it carries no calculation`);
    return details;
  }
  const names = ctx.variables.map((v) => v.name);
  const calculations: Calculation[] = [];
  (raw.calculate as Array<Record<string, unknown>>).forEach((c, k) => {
    const p = `${path}/calculate/${k}`;
    const shape = shapeProblems(c, ['if', 'variable', 'op', 'value'], p, '{ if?, variable, op, value }');
    if (shape.length) return void details.push(...shape);
    if (!('value' in c)) return void bad(`${p}/value`, 'is required');
    const v = ctx.variables.find((x) => x.name === c.variable);
    if (!v) {
      const name = String(c.variable);
      bad(`${p}/variable`, `is not a variable of this form${didYouMean(name, names)} (declare it in variables)`);
      return;
    }
    const op = c.op as CalculationOp;
    if (!CALCULATION_OPS.includes(op)) {
      bad(`${p}/op`, `must be one of ${CALCULATION_OPS.join(', ')}`);
      return;
    }
    if (v.type === 'text' && op !== 'set' && op !== 'add') {
      bad(`${p}/op`, `"${v.name}" is a text variable: it takes set and add (append), not ${op}`);
      return;
    }
    const value = checkOperand(c.value, v, at, `${p}/value`, ctx, bad);
    let condition;
    if (c.if !== undefined) {
      const checked = checkCondition(c.if, subjects, `${p}/if`);
      details.push(...checked.details);
      condition = checked.condition;
      if (!condition) return;
    }
    if (value === undefined) return;
    calculations.push({ ...(condition ? { if: condition } : {}), variable: v.name, op, value });
  });
  block.calculate = calculations;
  return details;
}

function checkOperand(
  raw: unknown,
  v: Variable,
  at: number,
  path: string,
  ctx: ComputeContext,
  bad: (path: string, message: string) => void,
): Operand | undefined {
  if (typeof raw === 'number') {
    if (v.type === 'text') return void bad(path, `"${v.name}" is a text variable: give text`);
    return raw;
  }
  if (typeof raw === 'string') {
    if (v.type === 'number') return void bad(path, `"${v.name}" is a number variable: it cannot take text`);
    return raw.slice(0, MAX_TEXT_VARIABLE);
  }
  const o = raw as { block?: unknown; variable?: unknown };
  const keys = isObject(raw) ? Object.keys(raw) : [];
  if (keys.length !== 1 || typeof (o.block ?? o.variable) !== 'string')
    return void bad(path, 'must be a number, a text, { "block": ref } or { "variable": name }');
  if (typeof o.block === 'string') {
    const j = ctx.indexOf.get(o.block);
    const b = j === undefined ? undefined : ctx.blocks[j];
    if (!b || !takesAnswer(b.type)) {
      const refs = ctx.blocks.filter((x) => x.ref && takesAnswer(x.type)).map((x) => x.ref!);
      return void bad(
        `${path}/block`,
        `is not the id or ref of a block that takes an answer${didYouMean(o.block, refs)}`,
      );
    }
    if (j! > at) return void bad(`${path}/block`, `names "${b.title}", which comes after this block`);
    if (v.type === 'number' && !NUMERIC_TYPES.includes(b.type))
      return void bad(`${path}/block`, `"${v.name}" is a number variable: name a number, rating or linear_scale block`);
    return { block: b.id };
  }
  const name = String(o.variable);
  const w = ctx.variables.find((x) => x.name === name);
  if (!w)
    return void bad(
      `${path}/variable`,
      `is not a variable of this form${didYouMean(
        name,
        ctx.variables.map((x) => x.name),
      )}`,
    );
  if (v.type === 'number' && w.type !== 'number')
    return void bad(`${path}/variable`, `"${name}" is text; "${v.name}" is a number`);
  return { variable: name };
}

/**
 * Recall in a text at block `at` (ctx.blocks.length: after every block, as endings are):
 * {{ref}} of a block above it that takes an answer, {{hidden:name}} of a declared hidden field,
 * {{variable:name}} of a variable changed above it.
 */
export function checkRecall(
  text: string | null | undefined,
  path: string,
  ctx: ComputeContext,
  at: number,
): ErrorDetail[] {
  if (!text || !text.includes('{{')) return [];
  const details: ErrorDetail[] = [];
  for (const t of recallTokens(text)) {
    const bad = (message: string) => details.push({ path, message: `{{${t.raw}}}: ${message}` });
    if (t.kind === 'hidden') {
      if (!ctx.hiddenFields.includes(t.name))
        bad(`is not a hidden field of this form${didYouMean(t.name, ctx.hiddenFields)}`);
    } else if (t.kind === 'variable') {
      const names = ctx.variables.map((v) => v.name);
      if (!names.includes(t.name)) bad(`is not a variable of this form${didYouMean(t.name, names)}`);
      else if (at < ctx.blocks.length && !((ctx.changedAt.get(t.name) ?? Infinity) < at))
        bad('no block above this text changes it, so it is not computed yet here');
    } else {
      const j = ctx.indexOf.get(t.name);
      if (j === undefined || !takesAnswer(ctx.blocks[j].type)) {
        const refs = ctx.blocks.filter((b) => b.ref && takesAnswer(b.type)).map((b) => b.ref!);
        bad(`is not the ref of a block that takes an answer${didYouMean(t.name, [...refs, ...ctx.hiddenFields])}`);
      } else if (j >= at) bad('recalls a block that is not above this text: recall only what is answered before it');
    }
  }
  return details;
}
