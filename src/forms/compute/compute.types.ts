/**
 * Forms that compute (issue 46): variables, the calculations blocks carry, quiz points and
 * correct answers, endings and the thank-you page. Their schema is compute.schema.ts, their
 * save-time check check.ts, their evaluator evaluate.ts and recall recall.ts; conditions on
 * variables are the condition language's ({ variable, op, value }: ../conditions).
 */
import type { Condition } from '../conditions';

export const VARIABLE_TYPES = ['number', 'text'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];
export const CALCULATION_OPS = ['add', 'subtract', 'multiply', 'divide', 'set'] as const;
export type CalculationOp = (typeof CALCULATION_OPS)[number];

/** The most variables a form declares (the built-ins of quizzes not counted). */
export const MAX_VARIABLES = 20;
/** The most calculations one block carries. */
export const MAX_CALCULATIONS = 20;
export const MAX_ENDINGS = 20;
/** Longest value of a text variable: longer text is cut there. */
export const MAX_TEXT_VARIABLE = 1000;
/** The built-in variables of a quiz (a form with a block that has points or correct). */
export const QUIZ_VARIABLES = ['score', 'correctCount'] as const;
/** A jump to an ending goes to "ending:<ref>". */
export const ENDING_PREFIX = 'ending:';

export interface Variable {
  name: string;
  type: VariableType;
  initial: number | string;
}

/** What a calculation applies: a number, a text, a block's answer (by id once stored) or a variable. */
export type Operand = number | string | { block: string } | { variable: string };

export interface Calculation {
  if?: Condition;
  variable: string;
  op: CalculationOp;
  value: Operand;
}

export interface Ending {
  ref: string;
  title: string;
  message?: string;
  redirectUrl?: string;
}

/** The page shown after a form without endings. */
export interface ThankYou {
  title?: string;
  message?: string;
}

/** A form's computing settings as stored (forms.compute); null on a form that has none. */
export interface FormCompute {
  variables?: Variable[];
  endings?: Ending[];
  thankYou?: ThankYou;
}

/** What a response computed: its variables (by name) and the ending it reached. */
export interface Outcome {
  variables: Record<string, number | string>;
  ending: string | null;
  /** Calculations that left their variable as it was (division by zero, a number out of range), by JSON path. */
  problems: Array<{ path: string; message: string }>;
}
