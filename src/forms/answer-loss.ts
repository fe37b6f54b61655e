import type { Block } from './blocks';
import type { FormCompute } from './compute/compute.types';

/** Something an edit would take away from existing answers. */
export interface AnswerLossCandidate {
  kind: 'block_removed' | 'block_retyped' | 'choice_removed' | 'variable_removed' | 'ending_removed';
  /** For variable_removed and ending_removed (issue 46): the variable's name, the ending's ref. */
  blockId: string;
  blockTitle: string;
  /** For choice_removed: the choice that goes, and whether answers hold a list (checkboxes). */
  choiceId?: string;
  choiceLabel?: string;
  multiple?: boolean;
  /** For choice_removed on a ranking: the places of the choices after it change. */
  ranked?: boolean;
  /** For choice_removed on a matrix: choiceId is one of its rows or one of its columns. */
  matrix?: 'row' | 'column';
  /** JSON Pointer into the update's arguments. */
  path: string;
}

/**
 * What an edit from `before` to `after` could discard: blocks removed, blocks given another type,
 * choices removed. Whether answers are really lost depends on the responses (checked in SQL).
 * Renaming a block or a choice under the same id loses nothing.
 */
export function lossCandidates(before: Block[], after: Block[]): AnswerLossCandidate[] {
  const afterIndex = new Map(after.map((b, i) => [b.id, i]));
  const out: AnswerLossCandidate[] = [];
  for (const old of before) {
    if (old.type === 'statement') continue;
    const index = afterIndex.get(old.id);
    if (index === undefined) {
      out.push({ kind: 'block_removed', blockId: old.id, blockTitle: old.title, path: '/blocks' });
      continue;
    }
    const next = after[index];
    if (next.type !== old.type) {
      out.push({ kind: 'block_retyped', blockId: old.id, blockTitle: old.title, path: `/blocks/${index}/type` });
      continue;
    }
    const kept = new Set((next.choices ?? []).map((c) => c.id));
    for (const choice of old.choices ?? []) {
      if (!kept.has(choice.id)) {
        out.push({
          kind: 'choice_removed',
          blockId: old.id,
          blockTitle: old.title,
          choiceId: choice.id,
          choiceLabel: choice.label,
          multiple: old.type === 'checkboxes' || old.type === 'ranking',
          ...(old.type === 'ranking' ? { ranked: true } : {}),
          path: `/blocks/${index}/choices`,
        });
      }
    }
    for (const side of ['rows', 'columns'] as const) {
      const keptIds = new Set((next[side] ?? []).map((c) => c.id));
      for (const gone of (old[side] ?? []).filter((c) => !keptIds.has(c.id)))
        out.push({
          kind: 'choice_removed',
          blockId: old.id,
          blockTitle: old.title,
          choiceId: gone.id,
          choiceLabel: gone.label,
          matrix: side === 'rows' ? 'row' : 'column',
          path: `/blocks/${index}/${side}`,
        });
    }
  }
  return out;
}

/**
 * What an edit of a form that computes (issue 46) could discard from stored responses: a variable
 * they hold (declared, or a quiz's built-in) or an ending they reached, removed.
 */
export function computeLossCandidates(
  before: { variables: string[]; compute?: FormCompute | null },
  after: { variables: string[]; compute?: FormCompute | null },
): AnswerLossCandidate[] {
  const kept = new Set(after.variables);
  const endings = new Set((after.compute?.endings ?? []).map((e) => e.ref));
  return [
    ...before.variables
      .filter((name) => !kept.has(name))
      .map((name) => ({ kind: 'variable_removed' as const, blockId: name, blockTitle: name, path: '/variables' })),
    ...(before.compute?.endings ?? [])
      .filter((e) => !endings.has(e.ref))
      .map((e) => ({ kind: 'ending_removed' as const, blockId: e.ref, blockTitle: e.title, path: '/endings' })),
  ];
}

export function describeLoss(c: AnswerLossCandidate, answers: number): string {
  const n = `${answers} answer${answers === 1 ? '' : 's'}`;
  switch (c.kind) {
    case 'block_removed':
      return `removing the block "${c.blockTitle}" (${c.blockId}) would discard ${n}`;
    case 'block_retyped':
      return `changing the type of the block "${c.blockTitle}" (${c.blockId}) would discard ${n}`;
    case 'choice_removed':
      if (c.matrix)
        return `removing the ${c.matrix} "${c.choiceLabel}" of the matrix "${c.blockTitle}" would discard ${n} in that ${c.matrix}`;
      return `removing the choice "${c.choiceLabel}" (${c.choiceId}) of "${c.blockTitle}" would discard ${n}`;
    case 'variable_removed':
      return `removing the variable "${c.blockId}" would discard it from ${answers} response${answers === 1 ? '' : 's'}`;
    case 'ending_removed':
      return `removing the ending "${c.blockId}" would discard it from ${answers} response${answers === 1 ? '' : 's'}`;
  }
}
