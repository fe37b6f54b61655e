/**
 * Recall (issue 46): {{ref}}, {{hidden:name}} and {{variable:name}} in titles, descriptions,
 * choice labels, endings' texts and redirect URLs, filled in by substitution with what was
 * answered or computed. The result is text: pages render it escaped like any answer, and a
 * redirect URL takes each value URL-encoded.
 */
import type { Block } from '../blocks';

export interface RecallToken {
  raw: string;
  kind: 'block' | 'hidden' | 'variable';
  name: string;
}

const TOKEN = /\{\{\s*(?:(hidden|variable):)?\s*([A-Za-z0-9_]{1,64})\s*\}\}/g;

export function recallTokens(text: string): RecallToken[] {
  return [...text.matchAll(TOKEN)].map((m) => ({
    raw: m[0].slice(2, -2),
    kind: (m[1] as 'hidden' | 'variable' | undefined) ?? 'block',
    name: m[2],
  }));
}

/** Whether a text recalls anything. */
export const hasRecall = (text: string | null | undefined): boolean =>
  !!text && text.includes('{{') && recallTokens(text).length > 0;

/** What recall reads: a block's answer by ref (as text), a hidden value, a variable; '' when not answered yet. */
export interface RecallValues {
  block(ref: string): string;
  hidden(name: string): string;
  variable(name: string): string;
}

/** `text` with each recall replaced by its value (`encode`d: the redirect URL's encodeURIComponent). */
export function recall(text: string, values: RecallValues, encode: (s: string) => string = (s) => s): string {
  if (!text.includes('{{')) return text;
  return text.replace(TOKEN, (_m, kind: string | undefined, name: string) =>
    encode(kind === 'hidden' ? values.hidden(name) : kind === 'variable' ? values.variable(name) : values.block(name)),
  );
}

const NOTHING: RecallValues = { block: () => '', hidden: () => '', variable: () => '' };

/**
 * Where an ending redirects: its URL with each value URL-encoded, as `new URL().href` (percent-encoded,
 * so a Location header takes it); undefined when that is no URL or leaves the template's scheme and host.
 */
export function redirectTarget(template: string, values: RecallValues): string | undefined {
  try {
    const base = new URL(recall(template, NOTHING));
    const url = new URL(recall(template, values, encodeURIComponent));
    const same = url.protocol === base.protocol && url.host === base.host && /^https?:$/.test(url.protocol);
    return same ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** A stored answer as recall shows it: choices by label (a list joined by ", "), yes/no as Yes/No, files not at all. */
export function answerText(block: Block, value: unknown): string {
  if (value === undefined || value === null) return '';
  if (block.type === 'file_upload') return '';
  if (block.type === 'yes_no') return value === true ? 'Yes' : value === false ? 'No' : '';
  const label = (id: unknown) => block.choices?.find((c) => c.id === id)?.label ?? String(id);
  if (Array.isArray(value)) return value.map(label).join(', ');
  if (block.choices) return label(value);
  return String(value);
}

/** RecallValues over stored answers (by block id), hidden values and variables. */
export function recallValues(
  blocks: Block[],
  answers: Record<string, unknown>,
  hidden: Record<string, string>,
  variables: Record<string, number | string>,
): RecallValues {
  const byRef = new Map(blocks.filter((b) => b.ref).map((b) => [b.ref!, b]));
  return {
    block: (ref) => {
      const b = byRef.get(ref);
      return b ? answerText(b, answers[b.id]) : '';
    },
    hidden: (name) => hidden[name] ?? '',
    variable: (name) => (variables[name] === undefined ? '' : String(variables[name])),
  };
}
