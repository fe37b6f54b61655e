import type { Block } from '../blocks';
import { evaluate, Facts } from '../conditions';
import { Calculation, MAX_TEXT_VARIABLE, Outcome, Variable } from './compute.types';

/**
 * The variables of one response as its path goes (see walk in form-logic.ts, which calls run()
 * for each block it shows, in form order, so calculations run in path order and a block not
 * shown adds nothing). For each block: its quiz part first (points of the choices picked added
 * to score; correct adds 1 to correctCount, and 1 to score on a block without points), then its
 * calculations in order, each when its `if` holds. A value naming a block not answered skips the
 * calculation; division by zero, or a result that is not a finite number, leaves the variable as
 * it was and is reported; text is cut at MAX_TEXT_VARIABLE characters.
 */
export class Calculator {
  private readonly values = new Map<string, number | string>();
  readonly problems: Outcome['problems'] = [];
  private readonly conditionFacts: Facts;

  constructor(
    private readonly variables: Variable[],
    private readonly answer: (blockId: string) => unknown,
    private readonly hidden: (name: string) => string | undefined,
    /** A block's index, for the paths of problems. */
    private readonly indexOf: (blockId: string) => number,
  ) {
    for (const v of variables) this.values.set(v.name, v.initial);
    this.conditionFacts = { answer, hidden, variable: (name) => this.values.get(name) };
  }

  /** Facts for conditions: answers of blocks shown so far, hidden values, variables so far. */
  facts(): Facts {
    return this.conditionFacts;
  }

  /** Applies a shown block's quiz part and calculations. */
  run(block: Block): void {
    if (block.points !== undefined || block.correct !== undefined) this.quiz(block);
    const calculations = block.calculate;
    if (!calculations?.length) return;
    for (let k = 0; k < calculations.length; k++) {
      const c = calculations[k];
      if (c.if && !evaluate(c.if, this.conditionFacts)) continue;
      this.apply(c, block.id, k);
    }
  }

  private quiz(block: Block): void {
    const value = this.answer(block.id);
    if (value === undefined || value === null || value === '') return;
    const picked = (Array.isArray(value) ? value : [value]) as string[];
    const correct = isCorrect(block, picked);
    if (correct) this.add('correctCount', 1);
    if (block.points)
      this.add(
        'score',
        picked.reduce((sum, id) => sum + (block.points![id] ?? 0), 0),
      );
    else if (correct) this.add('score', 1);
  }

  private add(name: string, n: number): void {
    const now = this.values.get(name);
    if (typeof now === 'number' && Number.isFinite(now + n)) this.values.set(name, now + n);
  }

  /** Applies calculation `k` of the block `blockId` (its path is made only for a problem). */
  private apply(c: Calculation, blockId: string, k: number): void {
    const path = () => `/blocks/${this.indexOf(blockId)}/calculate/${k}`;
    const now = this.values.get(c.variable);
    let operand: unknown;
    if (typeof c.value === 'object') {
      operand = 'block' in c.value ? this.answer(c.value.block) : this.values.get(c.value.variable);
      if (operand === undefined || operand === null || operand === '') return;
    } else operand = c.value;
    if (typeof now === 'string') {
      const text = operandText(operand);
      this.values.set(c.variable, (c.op === 'set' ? text : now + text).slice(0, MAX_TEXT_VARIABLE));
      return;
    }
    if (typeof now !== 'number' || typeof operand !== 'number') return;
    if (c.op === 'divide' && operand === 0) {
      this.problems.push({ path: path(), message: `divides "${c.variable}" by zero: it keeps ${now}` });
      return;
    }
    const next = arithmetic(c.op, now, operand);
    if (!Number.isFinite(next)) {
      this.problems.push({ path: path(), message: `makes "${c.variable}" too large a number: it keeps ${now}` });
      return;
    }
    // -0 is 0 (as JSON has it).
    this.values.set(c.variable, next === 0 ? 0 : next);
  }

  /** The variables now, by name. */
  result(): Record<string, number | string> {
    return Object.fromEntries(this.values);
  }
}

export function arithmetic(op: Calculation['op'], a: number, b: number): number {
  switch (op) {
    case 'add':
      return a + b;
    case 'subtract':
      return a - b;
    case 'multiply':
      return a * b;
    case 'divide':
      return a / b;
    case 'set':
      return b;
  }
}

function operandText(x: unknown): string {
  if (Array.isArray(x)) return x.join(', ');
  if (typeof x === 'boolean') return x ? 'Yes' : 'No';
  return String(x);
}

/** Whether the choices picked are the block's correct answer (checkboxes: exactly that set). */
export function isCorrect(block: Block, picked: string[]): boolean {
  if (block.correct === undefined) return false;
  const correct = Array.isArray(block.correct) ? block.correct : [block.correct];
  return picked.length === correct.length && correct.every((id) => picked.includes(id));
}

/** The highest score a quiz can give: per block, its best choice (checkboxes: all positive points), or 1 for a correct answer. */
export function maxScore(blocks: Block[]): number {
  let max = 0;
  for (const b of blocks) {
    if (b.points) {
      const points = Object.values(b.points);
      max += b.type === 'checkboxes' ? points.filter((n) => n > 0).reduce((s, n) => s + n, 0) : Math.max(0, ...points);
    } else if (b.correct !== undefined) max += 1;
  }
  return max;
}

/** Whether a form computes anything: variables (declared or a quiz's) or endings. */
export const isQuiz = (blocks: Block[]) => blocks.some((b) => b.points !== undefined || b.correct !== undefined);
