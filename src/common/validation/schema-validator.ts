/**
 * Argument validation shared by the tools layer and the domain rules: Ajv for JSON Schema, text PostgreSQL
 * can store, nesting depth, and errors as the envelope's details.
 */
import { Type } from '@sinclair/typebox';
import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { ErrorDetail, pointerSegment } from '../errors/api-error';

/**
 * One Ajv instance for every tool's input schema: strict, all errors, defaults filled in. Verbose,
 * so that an unknown argument's error carries the object's schema and value and toDetails can
 * suggest the argument that was meant.
 */
export function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true, useDefaults: true, coerceTypes: false, verbose: true });
  addFormats(ajv);
  return ajv;
}

export type { ValidateFunction };

/** Ajv's errors as the envelope's details: a JSON Pointer to the bad field and what is wrong. */
export function toDetails(errors: ErrorObject[] | null | undefined): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const e of errors ?? []) {
    let path = e.instancePath;
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      path = `${path}/${pointerSegment((e.params as { missingProperty: string }).missingProperty)}`;
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      const name = (e.params as { additionalProperty: string }).additionalProperty;
      path = `${path}/${pointerSegment(name)}`;
      const meant = closestKnownArgument(name, knownArguments(e));
      message = meant === undefined ? 'is not a known argument' : `is not a known argument; did you mean \`${meant}\`?`;
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    }
    const key = `${path}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push({ path, message });
  }
  return details;
}

/**
 * The arguments the object of an additionalProperties error knows, less those the caller has given
 * (needs Ajv's verbose). An argument with a default counts as not given: Ajv has filled it in.
 */
function knownArguments(e: ErrorObject): string[] {
  const properties = (e.parentSchema as { properties?: Record<string, { default?: unknown }> } | undefined)?.properties;
  const given = e.data && typeof e.data === 'object' ? (e.data as Record<string, unknown>) : {};
  return Object.entries(properties ?? {})
    .filter(([k, schema]) => schema?.default !== undefined || !Object.hasOwn(given, k))
    .map(([k]) => k);
}

/** Names callers use for a form's public id; `id` also stands for a tool's one `...Id` argument. */
const FORM_ID_SYNONYMS = new Set(['id', 'formid', 'form', 'formpublicid', 'publicformid']);

/**
 * The known argument an unknown one most likely meant, if any: the same name ignoring case, `_`
 * and `-` (`public_id`, `PublicId`); a usual synonym (`id`, `formId`, `form_id` for `publicId`);
 * else the nearest name by edit distance (adjacent swaps count once), if close enough to be a typo.
 */
export function closestKnownArgument(name: string, known: readonly string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[-_\s]/g, '');
  const wanted = norm(name);
  if (!wanted || wanted.length > 64 || known.length === 0) return undefined;
  const same = known.find((k) => norm(k) === wanted);
  if (same) return same;
  if (FORM_ID_SYNONYMS.has(wanted) && known.includes('publicId')) return 'publicId';
  if (wanted === 'id') {
    const ids = known.filter((k) => /Id$/.test(k));
    if (ids.length === 1) return ids[0];
  }
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = editDistance(wanted, norm(k));
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  // A typo, not another word: at most one edit in four characters (and at least one edit allowed).
  return bestDistance <= Math.max(1, Math.floor(wanted.length / 4)) ? best : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps cost 1. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * A string enum as plain JSON Schema `{ type: 'string', enum: [...] }`: clearer for agents than
 * TypeBox's union of literals, and one error ("must be one of ...") instead of one per literal.
 */
export function StringEnum<T extends string>(values: readonly T[], options: Record<string, unknown> = {}) {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });
}

/** Text PostgreSQL can store: no U+0000 and no lone UTF-16 surrogate (both refused by text and jsonb). */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}

/** How deep arguments may nest objects and arrays (the body itself is level 1); real tool input needs under 10. */
export const MAX_ARGUMENT_DEPTH = 64;

/**
 * The top-level argument whose value nests objects and arrays deeper than `max` levels, as an
 * envelope detail (none when within the limit). Checked right after the JSON is parsed, so that
 * no later step (the text check, the schema, the Idempotency-Key fingerprint, JSON.stringify)
 * walks a value deep enough to overflow the stack. Iterative: it cannot overflow itself.
 */
export function nestingDepthDetails(value: unknown, max = MAX_ARGUMENT_DEPTH): ErrorDetail[] {
  const message = `nests objects and arrays more than ${max} levels deep`;
  const stack: Array<{ value: unknown; depth: number; top: string }> = [{ value, depth: 1, top: '' }];
  while (stack.length > 0) {
    const { value: v, depth, top } = stack.pop()!;
    if (!v || typeof v !== 'object') continue;
    if (depth > max) return [{ path: top, message }];
    for (const [k, child] of Object.entries(v)) {
      stack.push({ value: child, depth: depth + 1, top: depth === 1 ? `/${pointerSegment(k)}` : top });
    }
  }
  return [];
}

/**
 * JSON Pointers of the strings (keys included) PostgreSQL could not store: refused up front as
 * bad arguments rather than failing in the database. Recursive: callers bound the depth first
 * (nestingDepthDetails).
 */
export function unstorableTextDetails(value: unknown, path = ''): ErrorDetail[] {
  const message = 'must be well-formed text (no NUL character \\u0000, no lone surrogate)';
  if (typeof value === 'string') return isStorableText(value) ? [] : [{ path, message }];
  if (Array.isArray(value)) return value.flatMap((v, i) => unstorableTextDetails(v, `${path}/${i}`));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => {
      const here = `${path}/${pointerSegment(k)}`;
      return isStorableText(k) ? unstorableTextDetails(v, here) : [{ path: here, message: `the name ${message}` }];
    });
  }
  return [];
}
