/**
 * What a dry run of create_form / update_form warns about (issue 49, item 4): a form that is valid
 * but likely not what its author meant. Each warning is certain, never a guess: a condition counts
 * as always true only when it holds for every response (a block both answered and not answered
 * among its alternatives), always false when it never does; anything else may hold.
 *  - a page no path reaches: no live jump goes to it, and the page before always jumps away;
 *  - a jump that can never be taken: its condition never holds, an earlier jump of its page_break
 *    always does, or the page it leaves is never reached;
 *  - a required block that logic can hide (its showIf, its page's, or a jump over its page):
 *    required then applies only when it is shown;
 *  - a recall that can be empty: of a block that is not required or can be hidden, or of a hidden
 *    field (a link may not carry it).
 */
import type { ErrorDetail } from '../common/errors/api-error';
import { Block, takesAnswer } from './blocks';
import { ENDING_PREFIX, type FormCompute } from './compute';
import { recallTokens } from './compute/recall';
import { Condition, isBlockLeaf, isHiddenLeaf, isVariableLeaf } from './conditions';
import { blockIndex } from './form-logic';

/** The subject a leaf tests: a block, a hidden field or a variable, by kind and name. */
function subjectOf(c: Condition): string | undefined {
  if (isBlockLeaf(c)) return `block:${c.block}`;
  if (isHiddenLeaf(c)) return `hidden:${c.hidden}`;
  if (isVariableLeaf(c)) return `variable:${c.variable}`;
  return undefined;
}

/** Whether some subject is tested both answered and not_answered among these leaves. */
function complementary(conditions: Condition[]): boolean {
  const answered = new Set<string>();
  const notAnswered = new Set<string>();
  for (const c of conditions) {
    const subject = subjectOf(c);
    if (!subject || !('op' in c)) continue;
    if (c.op === 'answered') answered.add(subject);
    if (c.op === 'not_answered') notAnswered.add(subject);
  }
  return [...answered].some((s) => notAnswered.has(s));
}

/** The alternatives of a condition: an any's members, else the condition itself. */
const alternatives = (c: Condition): Condition[] => ('any' in c ? c.any : [c]);

/** Holds for every response (one of its alternatives tests a subject answered, another not answered). */
export const alwaysTrue = (conditions: Condition[]): boolean => complementary(conditions.flatMap(alternatives));
/** Holds for no response (all of: a subject answered and not answered). */
export const alwaysFalse = (c: Condition): boolean => 'all' in c && complementary(c.all);

export function formWarnings(blocks: Block[], compute?: FormCompute | null): ErrorDetail[] {
  const warnings: ErrorDetail[] = [];
  const indexOf = blockIndex(blocks);
  // Pages by the index they start at: 0, then each page_break's.
  const starts = [0, ...blocks.flatMap((b, i) => (b.type === 'page_break' && i > 0 ? [i] : []))];
  const pageEnd = (p: number) => starts[p + 1] ?? blocks.length;
  const reached = new Set<number>([0]);
  const jumpedTo = new Set<number>();
  // Jumps that may be taken and skip a page: from the page after `from` up to (not including) `to`.
  const skips: Array<{ from: number; to: number; path: string }> = [];
  starts.forEach((start, p) => {
    const first = blocks[start]?.type === 'page_break' ? blocks[start] : undefined;
    if (p > 0 && !reached.has(start) && !jumpedTo.has(start))
      warnings.push({
        path: `/blocks/${start}`,
        message: 'starts a page no path reaches: the page before it always jumps away, and no jump goes to it',
      });
    const end = pageEnd(p);
    const closing = blocks[end];
    if (!closing) return;
    const isReached = reached.has(start) || jumpedTo.has(start);
    const jumps = closing.jumps ?? [];
    let always = -1;
    jumps.forEach((jump, k) => {
      const path = `/blocks/${end}/jumps/${k}`;
      const never = !isReached
        ? 'the page it leaves is never reached'
        : alwaysFalse(jump.if)
          ? 'its condition never holds'
          : always >= 0
            ? `the jump before it (jumps/${always}) is always taken`
            : undefined;
      if (never) {
        warnings.push({ path, message: `can never be taken: ${never}` });
        return;
      }
      if (alwaysTrue([jump.if])) always = k;
      const to = jump.to === 'end' || jump.to.startsWith(ENDING_PREFIX) ? blocks.length : (indexOf.get(jump.to) ?? end);
      jumpedTo.add(to);
      skips.push({ from: end, to, path });
    });
    // The next page is reached by going on, unless the page always jumps away (a page shown only
    // when its showIf holds may be skipped, and then its jumps are not taken).
    const goesOn = !alwaysTrue(jumps.map((j) => j.if)) || first?.showIf !== undefined;
    if (isReached && goesOn) reached.add(end);
  });

  /** Why logic can hide the block at index i, or undefined when it is always shown. */
  const hiddenBy = (i: number): string | undefined => {
    const b = blocks[i];
    if (b.showIf) return 'its showIf';
    const pageStart = starts.filter((s) => s <= i).at(-1)!;
    if (pageStart !== i && blocks[pageStart].showIf) return "its page's showIf";
    const skip = skips.find((s) => s.from <= i && i < s.to);
    return skip ? `the jump at ${skip.path}` : undefined;
  };

  blocks.forEach((b, i) => {
    if (!b.required || !takesAnswer(b.type)) return;
    const why = hiddenBy(i);
    if (why)
      warnings.push({
        path: `/blocks/${i}/required`,
        message: `is required, but ${why} can hide it: required applies only when it is shown`,
      });
  });

  const recall = (text: string | null | undefined, path: string) => {
    if (!text?.includes('{{')) return;
    for (const t of recallTokens(text)) {
      const why =
        t.kind === 'hidden'
          ? `a link may not carry the hidden field ${t.name}`
          : t.kind === 'block' && indexOf.has(t.name)
            ? blocks[indexOf.get(t.name)!].required
              ? hiddenBy(indexOf.get(t.name)!)?.concat(' can hide the block')
              : 'the block is not required'
            : undefined;
      if (why) warnings.push({ path, message: `{{${t.raw}}} can be empty: ${why}` });
    }
  };
  blocks.forEach((b, i) => {
    recall(b.title, `/blocks/${i}/title`);
    recall(b.description, `/blocks/${i}/description`);
    b.choices?.forEach((c, k) => recall(c.label, `/blocks/${i}/choices/${k}`));
  });
  compute?.endings?.forEach((e, k) => {
    recall(e.title, `/endings/${k}/title`);
    recall(e.message, `/endings/${k}/message`);
    recall(e.redirectUrl, `/endings/${k}/redirectUrl`);
  });
  recall(compute?.thankYou?.title, '/thankYou/title');
  recall(compute?.thankYou?.message, '/thankYou/message');
  return warnings;
}
