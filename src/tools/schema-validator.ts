import { Type } from '@sinclair/typebox';
import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { ErrorDetail, pointerSegment } from '../common/errors/api-error';

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

/**
 * JSON Pointers of the strings (keys included) PostgreSQL could not store: refused up front as
 * bad arguments rather than failing in the database.
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
