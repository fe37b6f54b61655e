/**
 * A form's limits (issue 47, items 2 and 3): its cap (maxResponses) and its quotas. Pure functions,
 * so that forms/ (checking and showing them) and the AccessService (counting, screening out) read
 * them alike. The counting itself is the store statement's (migration 1796000590000).
 */
import { ApiError, ErrorDetail } from '../common/errors/api-error';
import { closestKnownArgument } from '../common/validation/schema-validator';
import { Block, takesAnswer } from './blocks';
import type { FormCompute } from './compute/compute.types';
import { checkCondition, Condition, evaluate, Facts, Subjects } from './conditions';
import { formVariables } from './form-logic';

/** A quota as stored: `when` checked (blocks and choices by id). */
export interface Quota {
  name: string;
  limit: number;
  when: Condition;
  /** "end" (the form's closing page) or "ending:<ref>" (one of its endings, issue 46). */
  onFull: string;
}

/** The most quotas a form has (each is a counter row every matching submission locks). */
export const MAX_QUOTAS = 20;
/** The counter of a form's cap; a quota's is its name. */
export const CAP = '';

const NAME = /^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$/;

/** What the parts of a form a quota reads. A FormRecord is one. */
export interface LimitedForm {
  blocks: Block[];
  hiddenFields?: string[] | null;
  compute?: FormCompute | null;
  maxResponses?: number | null;
  quotas?: Quota[] | null;
}

const didYouMean = (name: string, known: string[]) => {
  const meant = closestKnownArgument(name, known);
  return meant === undefined ? '' : `; did you mean "${meant}"?`;
};

/** What a quota's condition may name: any block that takes an answer (id or ref), hidden field or variable. */
function quotaSubjects(form: LimitedForm): Subjects {
  const blocks = form.blocks.filter((b) => takesAnswer(b.type));
  const keys = blocks.flatMap((b) => (b.ref ? [b.id, b.ref] : [b.id]));
  const hidden = form.hiddenFields ?? [];
  const variables = formVariables(form);
  return {
    block: (key) =>
      blocks.find((b) => b.id === key || b.ref === key) ?? {
        error: `is not the id or ref of a block of this form that takes an answer${didYouMean(key, keys)}`,
      },
    hidden: (name) =>
      hidden.includes(name) || { error: `is not a hidden field of this form${didYouMean(name, hidden)}` },
    variable: (name) =>
      variables.find((v) => v.name === name) ?? {
        error: `is not a variable of this form${didYouMean(
          name,
          variables.map((v) => v.name),
        )}`,
      },
  };
}

/**
 * Checks quotas as sent (conditions by id or ref, choices by label or id) against the form: names
 * unique, conditions that name what the form has, onFull an ending it has. The quotas as stored, or
 * the details of every problem under `path`.
 */
export function checkQuotas(
  form: LimitedForm,
  input: ReadonlyArray<{ name: string; limit: number; when: unknown; onFull?: string }>,
  path = '/quotas',
): { quotas: Quota[]; details: ErrorDetail[] } {
  const details: ErrorDetail[] = [];
  const subjects = quotaSubjects(form);
  const endings = (form.compute?.endings ?? []).map((e) => e.ref);
  const seen = new Set<string>();
  const quotas = input.flatMap((q, i) => {
    const at = `${path}/${i}`;
    const shape = quotaShape(q, at);
    if (shape.length) {
      details.push(...shape);
      return [];
    }
    if (!NAME.test(q.name))
      details.push({ path: `${at}/name`, message: 'must be 1 to 64 letters, digits, spaces, _ . or -' });
    else if (seen.has(q.name)) details.push({ path: `${at}/name`, message: `"${q.name}" names another quota` });
    seen.add(q.name);
    const onFull = q.onFull ?? 'end';
    const ref = /^ending:(.+)$/.exec(onFull)?.[1];
    if (onFull !== 'end' && !(ref && endings.includes(ref)))
      details.push({
        path: `${at}/onFull`,
        message: ref
          ? `"${ref}" is not an ending of this form${didYouMean(ref, endings)}`
          : 'must be "end" or "ending:<ref>" (an ending of this form)',
      });
    const checked = checkCondition(q.when, subjects, `${at}/when`);
    details.push(...checked.details);
    return checked.condition ? [{ name: q.name, limit: q.limit, when: checked.condition, onFull }] : [];
  });
  return { quotas: details.length ? [] : quotas, details };
}

/** What the input schema leaves to this check (the tool list's size budget): a quota's fields and their types. */
function quotaShape(q: unknown, at: string): ErrorDetail[] {
  if (typeof q !== 'object' || q === null || Array.isArray(q))
    return [{ path: at, message: 'must be { name, limit, when, onFull? }' }];
  const x = q as Record<string, unknown>;
  const extra = Object.keys(x).filter((k) => !QUOTA_FIELDS.includes(k));
  return [
    ...extra.map((k) => ({ path: `${at}/${k}`, message: `is not a field of a quota${didYouMean(k, QUOTA_FIELDS)}` })),
    ...(typeof x.name === 'string' ? [] : [{ path: `${at}/name`, message: 'must be a string' }]),
    ...(Number.isInteger(x.limit) && (x.limit as number) >= 1 && (x.limit as number) <= 1e9
      ? []
      : [{ path: `${at}/limit`, message: 'must be an integer from 1 to 1000000000' }]),
    ...(x.when === undefined ? [{ path: `${at}/when`, message: 'is required: a condition, as showIf' }] : []),
    ...(x.onFull === undefined || typeof x.onFull === 'string'
      ? []
      : [{ path: `${at}/onFull`, message: 'must be "end" or "ending:<ref>"' }]),
  ];
}

const QUOTA_FIELDS = ['name', 'limit', 'when', 'onFull'];

/** The facts of a response's answers (by block id), hidden values and variables. */
export function answerFacts(
  answers: Record<string, unknown>,
  hidden: Record<string, string> = {},
  variables?: Record<string, number | string> | null,
): Facts {
  return { answer: (id) => answers[id], hidden: (name) => hidden[name], variable: (name) => variables?.[name] };
}

/** The quotas whose condition `facts` meet. */
export const quotasMatched = (form: LimitedForm, facts: Facts): Quota[] =>
  (form.quotas ?? []).filter((q) => evaluate(q.when, facts));

/**
 * The counters a completed response counts toward (the cap, then the quotas it matches, in the
 * form's order: the first full one is the one a refusal names); undefined on a form with no limit.
 */
export function countersOf(form: LimitedForm, facts: Facts): string[] | undefined {
  const names = [...(form.maxResponses != null ? [CAP] : []), ...quotasMatched(form, facts).map((q) => q.name)];
  return names.length ? names : undefined;
}

/** 400 invalid_arguments for quotas that do not hold, a detail at each one's path. */
export function invalidQuotas(details: ErrorDetail[]): ApiError {
  return new ApiError('invalid_arguments', {
    message: 'Some quotas are not valid.',
    hint: 'A quota\'s `when` names blocks (id or ref), hidden fields and variables of the form; onFull is "end" or "ending:REF" of one of its endings.',
    details,
  });
}
