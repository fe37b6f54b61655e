import { Type } from '@sinclair/typebox';
import { MAX_CALCULATIONS, MAX_ENDINGS, MAX_VARIABLES } from './compute.types';

/**
 * The JSON Schemas of forms that compute (issue 46): kept loose and described in a line each
 * (the tool list's size budget: create_form and update_form both carry them); check.ts checks
 * every field, with a message at its path.
 */
const list = (maxItems: number, description: string) =>
  Type.Unsafe<Array<Record<string, unknown>>>({ type: 'array', maxItems, items: { type: 'object' }, description });

/** create_form / update_form: `variables`. */
export const VariablesSchema = (description?: string) =>
  list(
    MAX_VARIABLES,
    description ??
      '[{ "name", "type": "number"|"text", "initial"? }]. Choices with points or correct add score and correctCount.',
  );

/** create_form / update_form: `endings`. */
export const EndingsSchema = (description?: string) =>
  list(
    MAX_ENDINGS,
    description ??
      '[{ "ref", "title", "message"?, "redirectUrl"? }]: a jump to "ending:REF" ends there, else the first. Texts recall {{ref}}, {{hidden:x}}, {{variable:x}}.',
  );

/** create_form / update_form: `thankYou`, the page after a form without endings. */
export const ThankYouSchema = (description = '{ "title"?, "message"? } after a form without endings') =>
  Type.Unsafe<Record<string, unknown>>({ type: 'object', description });

/** A block's `calculate`. */
export const CalculateSchema = list(
  MAX_CALCULATIONS,
  '[{ if?, variable, op: add|subtract|multiply|divide|set, value: number|text|{block}|{variable} }]',
);

/** A choice block's `points` and `correct` (quizzes). */
export const PointsSchema = Type.Unsafe<Record<string, number>>({
  type: 'object',
  description: '{ choice: points } to score',
});
export const CorrectSchema = Type.Unsafe<string | string[]>({ description: 'right choice(s)' });
