import { createHash } from 'node:crypto';

/**
 * JSON with object members sorted by name at every level (as RFC 8785 orders them) and no
 * whitespace: two bodies that mean the same arguments give the same text, whatever their key
 * order or spacing.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function')
    return canonicalJson((value as { toJSON(): unknown }).toJSON());
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined || typeof v === 'function' ? 'null' : canonicalJson(v))).join(',')}]`;
  const record = value as Record<string, unknown>;
  const members = Object.keys(record)
    .filter((k) => record[k] !== undefined && typeof record[k] !== 'function')
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`);
  return `{${members.join(',')}}`;
}

/** SHA-256 of the canonical JSON of a request's arguments. */
export function fingerprint(args: unknown): Buffer {
  return createHash('sha256').update(canonicalJson(args)).digest();
}
