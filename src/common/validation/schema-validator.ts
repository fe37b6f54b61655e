/**
 * Argument validation shared by the tools layer and the domain rules: Ajv for JSON Schema, text PostgreSQL
 * can store, nesting depth, and errors as the envelope's details.
 */
import { Type } from '@sinclair/typebox';
import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { ErrorDetail, pointerSegment } from '../errors/api-error';

/** One Ajv instance for every tool's input schema: strict, all errors, defaults filled in. */
export function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true, useDefaults: true, coerceTypes: false });
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
      path = `${path}/${pointerSegment((e.params as { additionalProperty: string }).additionalProperty)}`;
      message = 'is not a known argument';
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
