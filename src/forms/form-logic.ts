/**
 * Forms that branch (issue 25): block refs, page breaks, showIf, jumps and hidden fields. Checks
 * them when a form is saved (normalizeForm, around normalizeBlocks), shows them (blocksView), and
 * computes the path a response takes through the form (walk), which decides which blocks were
 * shown, so which answers are required, allowed and stored (validateResponse). The conditions
 * themselves are the condition language's (./conditions).
 */
import { ErrorDetail, pointerSegment } from '../common/errors/api-error';
import { closestKnownArgument, isStorableText } from '../common/validation/schema-validator';
import {
  AnswerWording,
  Block,
  BlockInput,
  blockView,
  isBlank,
  Jump,
  normalizeBlocks,
  Refusal,
  takesAnswer,
  validateAnswers,
} from './blocks';
import {
  checkCondition,
  Condition,
  conditionView,
  describeCondition,
  evaluate,
  Facts,
  namesOf,
  Subjects,
} from './conditions';
import {
  Calculator,
  checkBlockCompute,
  checkEndings,
  checkRecall,
  checkThankYou,
  checkVariables,
  ComputeContext,
  ENDING_PREFIX,
  Ending,
  firstChanges,
  FormCompute,
  isQuiz,
  isQuizBlock,
  Outcome,
  ThankYou,
  Variable,
  variableSubject,
} from './compute';

/** A form's computing settings as callers send them (issue 46): checked by normalizeForm. */
export interface ComputeInput {
  variables?: Array<Record<string, unknown>> | Variable[];
  endings?: Array<Record<string, unknown>> | Ending[];
  thankYou?: Record<string, unknown> | ThankYou;
}

/** A block ref or a hidden field's name. Refs never start with b_, so a ref never looks like a block id. */
export const REF_PATTERN = '^[a-z][a-z0-9_]{0,63}$';
const REF = new RegExp(REF_PATTERN);
export const MAX_HIDDEN_FIELDS = 20;
export const MAX_JUMPS = 20;
/** Longest value of a hidden field. */
export const MAX_HIDDEN_VALUE = 1000;
const LABEL_TYPES = ['rating', 'linear_scale', 'nps'];

function refProblem(name: string): string | undefined {
  if (!REF.test(name)) return `must match ${REF_PATTERN} (lower-case letters, digits and _, starting with a letter)`;
  if (name.startsWith('b_')) return 'must not start with b_ (block ids do)';
  return undefined;
}

/** A hidden field list as saved: names like refs, unique, at most MAX_HIDDEN_FIELDS. */
export function checkHiddenFields(names: string[], path = '/hiddenFields'): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  if (names.length > MAX_HIDDEN_FIELDS)
    details.push({ path, message: `must have at most ${MAX_HIDDEN_FIELDS} hidden fields` });
  const seen = new Set<string>();
  names.forEach((name, i) => {
    const problem = refProblem(name) ?? (seen.has(name) ? `"${name}" appears twice` : undefined);
    if (problem) details.push({ path: `${path}/${i}`, message: problem });
    seen.add(name);
  });
  return details;
}

/**
 * Checks a form's blocks as saved, with their refs and rules: normalizeBlocks (types, settings,
 * ids), then refs (format, unique; in an update, a block sent with a known ref and no id is that
 * block, and a block sent without ref keeps its ref, `ref: null` removes it), end labels, and the
 * rules: showIf on any block, jumps on page_breaks only, each condition naming only blocks before
 * it and type-checked against them, each jump going forward to a later page_break or "end".
 * `previous` and `previousHidden` are the form before an update: a rule that names a block, a
 * choice or a hidden field the update removes (or a block it retypes) is refused at the rule's
 * path with a message that says so, unless the same update changes the rule.
 */
export function normalizeForm(
  input: BlockInput[],
  previous: Block[],
  hiddenFields: string[],
  previousHidden: string[] = [],
  basePath = '/blocks',
  computeInput: ComputeInput = {},
): { blocks: Block[]; details: ErrorDetail[]; compute: FormCompute | null } {
  const details: ErrorDetail[] = [];
  const bad = (path: string, message: string) => details.push({ path, message });

  // A block sent with a known ref and no id is that block.
  const previousByRef = new Map(previous.filter((b) => b.ref).map((b) => [b.ref!, b]));
  const claimed = new Set(input.flatMap((b) => (b.id ? [b.id] : [])));
  const prepared = input.map((raw) => {
    if (raw.id !== undefined || typeof raw.ref !== 'string') return raw;
    const known = previousByRef.get(raw.ref);
    if (!known || claimed.has(known.id)) return raw;
    claimed.add(known.id);
    return { ...raw, id: known.id };
  });
  const normalized = normalizeBlocks(prepared, previous, basePath);
  details.push(...normalized.details);
  const blocks = normalized.blocks;
  const previousById = new Map(previous.map((b) => [b.id, b]));

  const refs = new Set<string>();
  prepared.forEach((raw, i) => {
    const block = blocks[i];
    const path = `${basePath}/${i}`;
    const ref =
      raw.ref === null ? undefined : (raw.ref ?? (raw.id !== undefined ? previousById.get(raw.id)?.ref : undefined));
    if (ref !== undefined) {
      const problem =
        refProblem(ref) ?? (refs.has(ref) ? `"${ref}" is the ref of another block of this form` : undefined);
      if (problem) bad(`${path}/ref`, problem);
      refs.add(ref);
      block.ref = ref;
    }
    for (const label of ['minLabel', 'maxLabel'] as const) {
      if (raw[label] === undefined) continue;
      if (!LABEL_TYPES.includes(raw.type)) bad(`${path}/${label}`, `is not a setting of ${raw.type} blocks`);
      else block[label] = raw[label];
    }
  });

  // Rules name blocks by id or ref; only blocks before the rule.
  const indexOf = blockIndex(blocks);
  const previousKeys = new Map<string, Block>();
  for (const b of previous) {
    previousKeys.set(b.id, b);
    if (b.ref) previousKeys.set(b.ref, b);
  }
  const hidden = new Set(hiddenFields);

  // Variables (issue 46) share the namespace of refs and hidden fields.
  const taken = new Map<string, string>();
  for (const b of blocks) if (b.ref) taken.set(b.ref, 'the ref of a block');
  for (const h of hiddenFields) taken.set(h, 'a hidden field');
  const vars = checkVariables(computeInput.variables, taken, prepared.some(isQuizBlock));
  details.push(...vars.details);
  const ctx: ComputeContext = {
    blocks,
    variables: vars.variables,
    hiddenFields,
    indexOf,
    changedAt: firstChanges(prepared),
  };
  const endingRefs = new Set((computeInput.endings ?? []).map((e) => (e as { ref?: unknown }).ref));
  const removed = (b: Block) =>
    `names the block "${b.title}" (${b.ref ?? b.id}), which this update removes; change or remove this rule in the same update`;
  // In a calculation (`self`), a condition may name its own block and any variable.
  const subjectsAt = (at: number, self = false): Subjects => ({
    variable: variableSubject(ctx, at, self),
    block(key) {
      const j = indexOf.get(key);
      if (j === undefined) {
        const gone = previousKeys.get(key);
        return { error: gone ? removed(gone) : 'is not the id or ref of a block of this form' };
      }
      if (j === at && !self) return { error: 'a rule cannot name its own block' };
      if (j > at)
        return {
          error: `names "${blocks[j].title}", which comes after this rule; a condition may only name blocks before it`,
        };
      return blocks[j];
    },
    hidden(name) {
      if (hidden.has(name)) return true;
      if (previousHidden.includes(name))
        return {
          error: `the hidden field "${name}" is removed by this update; change or remove this rule in the same update`,
        };
      return {
        error: `is not a hidden field of this form; declare it in hiddenFields (${hiddenFields.join(', ') || 'none yet'})`,
      };
    },
    note(blockId, problem) {
      const before = previousById.get(blockId);
      const now = blocks[indexOf.get(blockId)!];
      if (!before || !now) return undefined;
      if (before.type !== now.type) return `this update changes it from ${before.type} to ${now.type}`;
      if (problem.choice !== undefined) {
        const choice = before.choices?.find((c) => c.id === problem.choice || c.label === problem.choice);
        if (choice && !now.choices?.some((c) => c.id === choice.id))
          return `this update removes the choice "${choice.label}"`;
      }
      return undefined;
    },
  });

  prepared.forEach((raw, i) => {
    const block = blocks[i];
    const path = `${basePath}/${i}`;
    details.push(...checkBlockCompute(raw, block, i, path, ctx, subjectsAt(i, true)));
    details.push(...checkRecall(block.title, `${path}/title`, ctx, i));
    details.push(...checkRecall(block.description, `${path}/description`, ctx, i));
    block.choices?.forEach((c, k) => details.push(...checkRecall(c.label, `${path}/choices/${k}`, ctx, i)));
    if (raw.showIf !== undefined) {
      const { condition, details: d } = checkCondition(raw.showIf, subjectsAt(i), `${path}/showIf`);
      details.push(...d);
      if (condition) block.showIf = condition;
    }
    if (raw.jumps === undefined) return;
    if (raw.type !== 'page_break') {
      bad(`${path}/jumps`, 'only a page_break takes jumps (applied when leaving the page it closes)');
      return;
    }
    if (raw.jumps.length > MAX_JUMPS) bad(`${path}/jumps`, `must have at most ${MAX_JUMPS} jumps`);
    const jumps: Jump[] = [];
    raw.jumps.forEach((jump, j) => {
      const at = `${path}/jumps/${j}`;
      const { condition, details: d } = checkCondition(jump.if, subjectsAt(i), `${at}/if`);
      details.push(...d);
      let to: string | undefined;
      if (jump.to === 'end') to = 'end';
      else if (jump.to.startsWith(ENDING_PREFIX)) {
        const ref = jump.to.slice(ENDING_PREFIX.length);
        if (endingRefs.has(ref)) to = jump.to;
        else
          bad(
            `${at}/to`,
            `"${ref}" is not the ref of an ending of this form (its endings: ${[...endingRefs].join(', ') || 'none'})`,
          );
      } else {
        const k = indexOf.get(jump.to);
        const gone = k === undefined ? previousKeys.get(jump.to) : undefined;
        if (gone) bad(`${at}/to`, removed(gone));
        else if (k === undefined || blocks[k].type !== 'page_break')
          bad(`${at}/to`, 'must be "end" or the ref or id of a later page_break of this form');
        else if (k <= i) bad(`${at}/to`, `jumps only go forward: "${jump.to}" is not after this page_break`);
        else to = blocks[k].id;
      }
      if (condition && to) jumps.push({ if: condition, to });
    });
    block.jumps = jumps;
  });
  const endings = checkEndings(computeInput.endings, ctx);
  const { thankYou, details: thanks } = checkThankYou(computeInput.thankYou, ctx);
  details.push(...endings.details, ...thanks);
  const compute: FormCompute = {
    ...(vars.declared.length ? { variables: vars.declared } : {}),
    ...(endings.endings.length ? { endings: endings.endings } : {}),
    ...(thankYou ? { thankYou } : {}),
  };
  return { blocks, details, compute: Object.keys(compute).length ? compute : null };
}

/** A form's variables: those declared, and a quiz's built-ins (score unless declared, correctCount). */
export function formVariables(form: { blocks: Block[]; compute?: FormCompute | null }): Variable[] {
  const declared = form.compute?.variables ?? [];
  if (!isQuiz(form.blocks)) return declared;
  return [
    ...declared,
    ...(declared.some((v) => v.name === 'score') ? [] : [{ name: 'score', type: 'number' as const, initial: 0 }]),
    { name: 'correctCount', type: 'number' as const, initial: 0 },
  ];
}

/**
 * What stored answers (by block id, already checked) and hidden values compute on a form that
 * computes: the same walk as validateResponse's (a partial response's, read before it completes).
 */
export function computeOutcome(
  form: { blocks: Block[]; compute?: FormCompute | null },
  answers: Record<string, unknown>,
  hidden: Record<string, string>,
): Outcome {
  const path = walk(
    form.blocks,
    (id) => answers[id],
    (name) => hidden[name],
    formVariables(form),
  );
  return {
    variables: path.calculator!.result(),
    ending: path.ending ?? form.compute?.endings?.[0]?.ref ?? null,
    problems: path.calculator!.problems,
  };
}

/** Whether responses to the form carry variables and an ending. */
export function computes(form: { blocks: Block[]; compute?: FormCompute | null }): boolean {
  return !!form.compute?.variables?.length || !!form.compute?.endings?.length || isQuiz(form.blocks);
}

/**
 * An update that changes hiddenFields but not the blocks: the stored rules must not name a hidden
 * field it removes.
 */
export function checkHiddenStillNamed(blocks: Block[], hiddenFields: string[]): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  blocks.forEach((b, i) => {
    const rules: Array<[string, Condition]> = [];
    if (b.showIf) rules.push([`/blocks/${i}/showIf`, b.showIf]);
    b.jumps?.forEach((j, k) => rules.push([`/blocks/${i}/jumps/${k}/if`, j.if]));
    for (const [at, rule] of rules) {
      for (const name of namesOf(rule).hidden) {
        if (!hiddenFields.includes(name))
          details.push({
            path: '/hiddenFields',
            message: `the hidden field "${name}" is named by the rule at ${at}; change or remove that rule in the same update (send blocks)`,
          });
      }
    }
  });
  return details;
}

/** A form's blocks in the API's shape: blockView plus rules (naming blocks by ref where they have one) and end labels. */
export function blocksView(blocks: Block[]): Array<Record<string, unknown>> {
  // Blocks are named by ref only in rules, so the names are made only for a form that has some.
  let names: ((blockId: string) => string) | undefined;
  const name = (blockId: string) => (names ??= nameOf(blocks))(blockId);
  return blocks.map((b) => {
    const view = blockView(b);
    if (b.minLabel !== undefined) view.minLabel = b.minLabel;
    if (b.maxLabel !== undefined) view.maxLabel = b.maxLabel;
    if (b.showIf) view.showIf = conditionView(b.showIf, name);
    if (b.jumps)
      view.jumps = b.jumps.map((j) => ({
        if: conditionView(j.if, name),
        to: j.to === 'end' || j.to.startsWith(ENDING_PREFIX) ? j.to : name(j.to),
      }));
    if (b.points) view.points = b.points;
    if (b.correct !== undefined) view.correct = b.correct;
    if (b.calculate)
      view.calculate = b.calculate.map((c) => ({
        ...(c.if ? { if: conditionView(c.if, name) } : {}),
        variable: c.variable,
        op: c.op,
        value: typeof c.value === 'object' && 'block' in c.value ? { block: name(c.value.block) } : c.value,
      }));
    return view;
  });
}

/** Names blocks as callers see them: by ref where the block has one, else by id. */
export function nameOf(blocks: Block[]): (blockId: string) => string {
  const refs = new Map(blocks.filter((b) => b.ref).map((b) => [b.id, b.ref!]));
  return (id) => refs.get(id) ?? id;
}

/** Whether the form has any rule: without one, every block is shown and walk() is not needed. */
export function hasLogic(blocks: Block[]): boolean {
  return blocks.some((b) => b.showIf !== undefined || (b.jumps !== undefined && b.jumps.length > 0));
}

/** The path of a response: the blocks shown (in form order) and, for each block not shown, why. */
export interface Path {
  shown: Set<string>;
  why: Map<string, string>;
  /** The ending a jump went to ("ending:<ref>" taken: its ref). */
  ending?: string;
  /** With variables: what the blocks shown computed, in path order (issue 46). */
  calculator?: Calculator;
}

/**
 * The one function that computes a response's path from its answers (stored values, by block id)
 * and hidden values. Pages are the runs of blocks between page_breaks. A page starting at a
 * page_break whose showIf does not hold is skipped (its blocks not shown, its own jumps not
 * taken); a block is shown when its page is and its showIf holds; a condition sees only blocks
 * already shown (a block not shown counts as not answered). On leaving a page, the jumps of the
 * page_break that closes it are tried in order: the first that holds goes to the page starting at
 * its `to` (the pages between are skipped) or ends the form ("end", or an ending); else the next
 * page follows. With `variables` (issue 46), each block shown runs its calculations as it is
 * shown (Calculator), so conditions see the variables as computed by the blocks before them.
 */
export function walk(
  blocks: Block[],
  answer: (blockId: string) => unknown,
  hidden: (name: string) => string | undefined,
  variables?: Variable[],
): Path {
  const shown = new Set<string>();
  const why = new Map<string, string>();
  const { logic, name, indexOf, breaks } = prepare(blocks);
  const seen = (id: string) => (shown.has(id) ? answer(id) : undefined);
  const calculator = variables && new Calculator(variables, seen, hidden, (id) => indexOf.get(id) ?? -1);
  if (!logic) {
    for (const b of blocks) {
      shown.add(b.id);
      calculator?.run(b);
    }
    return { shown, why, calculator };
  }
  const facts: Facts = calculator ? calculator.facts() : { answer: seen, hidden };
  const label = (b: Block) => (b.title ? `"${b.title}" (${name(b.id)})` : name(b.id));
  const nextBreak = (from: number) => (from < blocks.length ? breaks[from] : blocks.length);
  const skip = (from: number, to: number, reason: string) => {
    for (let k = from; k < to; k++) if (!why.has(blocks[k].id)) why.set(blocks[k].id, reason);
  };
  let ending: string | undefined;

  let i = 0;
  while (i < blocks.length) {
    let start = i;
    if (blocks[i].type === 'page_break') {
      const pb = blocks[i];
      const end = nextBreak(i + 1);
      if (pb.showIf && !evaluate(pb.showIf, facts)) {
        skip(
          i,
          end,
          `it is on the page starting at ${label(pb)}, shown only when ${describeCondition(pb.showIf, name)}`,
        );
        i = end;
        continue;
      }
      shown.add(pb.id);
      start = i + 1;
    }
    const end = nextBreak(start);
    for (let k = start; k < end; k++) {
      const b = blocks[k];
      if (b.showIf && !evaluate(b.showIf, facts))
        why.set(b.id, `${label(b)} is shown only when ${describeCondition(b.showIf, name)}`);
      else {
        shown.add(b.id);
        calculator?.run(b);
      }
    }
    if (end >= blocks.length) break;
    const closing = blocks[end];
    let next = end;
    for (const jump of closing.jumps ?? []) {
      if (!evaluate(jump.if, facts)) continue;
      const rule = `the jump at ${label(closing)} when ${describeCondition(jump.if, name)}`;
      if (jump.to === 'end' || jump.to.startsWith(ENDING_PREFIX)) {
        skip(end, blocks.length, `${rule} ends the form before it`);
        next = blocks.length;
        if (jump.to !== 'end') ending = jump.to.slice(ENDING_PREFIX.length);
      } else {
        next = indexOf.get(jump.to)!;
        skip(end, next, `${rule} goes past it to ${label(blocks[next])}`);
      }
      break;
    }
    i = next;
  }
  return { shown, why, ending, calculator };
}

/** A response checked against its form: what to store, or the details of what is refused. */
export interface CheckedResponse {
  answers: Record<string, unknown>;
  hidden: Record<string, string>;
  /** Ids of the blocks shown, in form order; null on a form without rules (every block is shown). */
  shown: string[] | null;
  details: ErrorDetail[];
  /** Why answers to blocks not shown are refused (the first one), for the error's hint. */
  notShown?: string;
  /** The likely fix of the first answer refused with one ('api'): a hidden field sent in answers, a misspelt ref. */
  hint?: string;
  /** On a form that computes (issue 46): its variables and the ending reached. */
  outcome?: Outcome;
}

/**
 * Validates a response against the path its own answers and hidden values produce: answers are
 * keyed by block id or ref; `required` applies to shown blocks only; an answer to a block not
 * shown is refused ('api', at its path, saying which rule hid it) or dropped ('web': a person who
 * went back and changed an earlier answer must not be blocked by a stale value); unknown hidden
 * field names are refused ('api') or ignored ('web': utm tags must not break a page). Details
 * point at the key the caller used; a block the caller left out, by its ref where it has one
 * (the page, 'web', names its fields by id, so it keeps ids). Without rules or hidden fields this
 * is validateAnswers.
 */
export function validateResponse(
  form: { blocks: Block[]; hiddenFields?: string[]; compute?: FormCompute | null },
  answers: Record<string, unknown>,
  hiddenInput: Record<string, unknown> | undefined,
  opts: { wording?: AnswerWording; source?: 'api' | 'web' | 'import' } = {},
): CheckedResponse {
  const wording = opts.wording ?? 'api';
  const lenient = opts.source === 'web';
  const blocks = form.blocks;
  const details: ErrorDetail[] = [];

  // Answers by ref become answers by id; details go back to the key the caller used.
  const { byRef, loose, logic, name } = prepare(blocks);
  let byId = answers;
  const keyOf = new Map<string, string>();
  if (byRef.size) {
    byId = {};
    for (const [key, value] of Object.entries(answers)) {
      const id = byRef.get(key) ?? key;
      if (id !== key && Object.hasOwn(answers, id)) {
        details.push({
          path: `/answers/${pointerSegment(key)}`,
          message: `answers the block ${id} a second time (once by id, once by ref)`,
        });
        continue;
      }
      if (id !== key) keyOf.set(id, key);
      byId[id] = value;
    }
  }

  const hidden: Record<string, string> = {};
  const declared = new Set(form.hiddenFields ?? []);
  for (const [name, value] of Object.entries(hiddenInput ?? {})) {
    const path = `/hidden/${pointerSegment(name)}`;
    if (!declared.has(name)) {
      if (!lenient)
        details.push({
          path,
          message: `is not a hidden field of this form (its hidden fields: ${[...declared].join(', ') || 'none'})`,
        });
      continue;
    }
    if (typeof value !== 'string') details.push({ path, message: 'must be a string' });
    else if (value.length > MAX_HIDDEN_VALUE)
      details.push({ path, message: `must be at most ${MAX_HIDDEN_VALUE} characters` });
    else if (!isStorableText(value))
      details.push({ path, message: 'must be well-formed text (no NUL character, no lone surrogate)' });
    else if (value !== '') hidden[name] = value;
  }

  let checked: { stored: Record<string, unknown>; details: ErrorDetail[]; hint?: string };
  let shownIds: string[] | null;
  let notShown: string | undefined;
  const unknown = (key: string) => unknownKey(blocks, declared, key, answers[key]);
  const variables = computes(form) ? formVariables(form) : undefined;
  let outcome: Outcome | undefined;
  const outcomeOf = (path: Path): Outcome => ({
    variables: path.calculator!.result(),
    ending: path.ending ?? form.compute?.endings?.[0]?.ref ?? null,
    problems: path.calculator!.problems,
  });
  if (!logic) {
    checked = validateAnswers(blocks, byId, '/answers', wording, unknown);
    shownIds = null;
    if (variables)
      outcome = outcomeOf(
        walk(
          blocks,
          (id) => checked.stored[id],
          (name) => hidden[name],
          variables,
        ),
      );
  } else {
    // One pass over the answers without `required` gives what the path is computed from; then
    // answers to blocks not shown are refused (or dropped), and required applies to shown blocks.
    const all = validateAnswers(loose, byId, '/answers', wording, unknown);
    const path = walk(
      blocks,
      (id) => all.stored[id],
      (name) => hidden[name],
      variables,
    );
    if (variables) outcome = outcomeOf(path);
    const pathOf = (id: string) => `/answers/${pointerSegment(id)}`;
    const offPath = new Set<string>();
    const stored: Record<string, unknown> = {};
    shownIds = [];
    const missing: Block[] = [];
    const refused = new Set(all.details.map((d) => d.path));
    for (const b of blocks) {
      if (path.shown.has(b.id)) {
        shownIds.push(b.id);
        if (Object.hasOwn(all.stored, b.id)) stored[b.id] = all.stored[b.id];
        else if (b.required && !refused.has(pathOf(b.id))) missing.push(b);
        continue;
      }
      offPath.add(pathOf(b.id));
      if (!Object.hasOwn(byId, b.id) || isBlank(byId[b.id]) || lenient) continue;
      const reason = path.why.get(b.id) ?? 'it is not on the path of these answers';
      notShown ??= reason;
      details.push({ path: pathOf(b.id), message: `was not shown, so it takes no answer: ${reason}` });
    }
    checked = {
      stored,
      hint: all.hint,
      details: [
        ...all.details.filter((d) => !offPath.has(d.path)),
        // required, worded as validateAnswers words it, for the shown blocks left blank
        ...(missing.length ? validateAnswers(missing, {}, '/answers', wording).details : []),
      ],
    };
  }
  details.push(...checked.details);
  for (const d of details) {
    // A part of an answer (a matrix's row) keeps its place after the block's key.
    const m = /^\/answers\/([^/]+)(\/.*)?$/.exec(d.path);
    if (!m) continue;
    const id = m[1].replace(/~1/g, '/').replace(/~0/g, '~');
    // The key the caller sent; for a block left out, its ref (except on the page, whose fields are ids).
    const key = keyOf.get(id) ?? (lenient || Object.hasOwn(answers, id) ? undefined : name(id));
    if (key && key !== id) d.path = `/answers/${pointerSegment(key)}${m[2] ?? ''}`;
  }
  return {
    answers: checked.stored,
    hidden,
    shown: shownIds,
    details,
    notShown,
    ...(checked.hint ? { hint: checked.hint } : {}),
    ...(outcome ? { outcome } : {}),
  };
}

/**
 * Why an answer's key names no block of the form, pointing at the likely fix ('api'): a hidden
 * field sent in answers belongs in `hidden`; a key one typo away from a ref or id is that one.
 */
function unknownKey(blocks: Block[], hiddenFields: Set<string>, key: string, value: unknown): Refusal {
  const person = 'This form has no question with this id.';
  if (hiddenFields.has(key)) {
    const sample = typeof value === 'string' && value.length <= 40 ? JSON.stringify(value) : '"..."';
    return {
      api: `is a hidden field of this form, not a block: send it in hidden, beside answers`,
      person,
      hint: `Send hidden field values in hidden, beside answers: "hidden": { ${JSON.stringify(key)}: ${sample} }.`,
    };
  }
  const keys = blocks.filter((b) => takesAnswer(b.type)).flatMap((b) => (b.ref ? [b.ref, b.id] : [b.id]));
  const meant = closestKnownArgument(key, keys) ?? closestKnownArgument(key, [...hiddenFields]);
  if (meant === undefined) {
    const refs = blocks.filter((b) => b.ref && takesAnswer(b.type)).map((b) => b.ref!);
    return {
      api: 'this form has no block with this id or ref',
      person,
      hint: `Answers are keyed by block id or ref, as get_form shows them${refs.length ? ` (this form's refs: ${refs.slice(0, 20).join(', ')}${refs.length > 20 ? ', ...' : ''})` : ''}.`,
    };
  }
  const what = hiddenFields.has(meant)
    ? `the hidden field \`${meant}\` (send it in hidden, beside answers)`
    : `\`${meant}\``;
  return {
    api: `this form has no block with this id or ref; did you mean ${what}?`,
    person,
    hint: `Did you mean ${what}? Answers are keyed by block id or ref, as get_form shows them.`,
  };
}

/**
 * What validateResponse needs of a form's blocks, computed once per blocks array (a form as read
 * is reused by every submission to it: FormsService.recent).
 */
interface Prepared {
  byRef: Map<string, string>;
  /** The blocks with required off: the first pass over the answers. */
  loose: Block[];
  logic: boolean;
  name: (blockId: string) => string;
  indexOf: Map<string, number>;
  /** breaks[i]: the index of the first page_break at or after i (blocks.length when none). */
  breaks: number[];
}
const prepared = new WeakMap<Block[], Prepared>();
function prepare(blocks: Block[]): Prepared {
  let p = prepared.get(blocks);
  if (!p) {
    const breaks = new Array<number>(blocks.length);
    for (let i = blocks.length - 1, next = blocks.length; i >= 0; i--) {
      if (blocks[i].type === 'page_break') next = i;
      breaks[i] = next;
    }
    p = {
      byRef: new Map(blocks.filter((b) => b.ref).map((b) => [b.ref!, b.id])),
      loose: blocks.map((b) => ({ ...b, required: false })),
      logic: hasLogic(blocks),
      name: nameOf(blocks),
      indexOf: new Map(blocks.map((b, i) => [b.id, i])),
      breaks,
    };
    prepared.set(blocks, p);
  }
  return p;
}

/** Where each block is in the list, by its id and by its ref. */
export function blockIndex(blocks: Block[]): Map<string, number> {
  const indexOf = new Map<string, number>();
  blocks.forEach((b, i) => {
    indexOf.set(b.id, i);
    if (b.ref) indexOf.set(b.ref, i);
  });
  return indexOf;
}
