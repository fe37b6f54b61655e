/** Random and public identifiers: forms' public ids, block and choice ids, base62 helpers. */
import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A uniformly random base62 string (rejection sampling, so no character is favoured). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62]; // 248 = 4 * 62
      if (out.length === length) break;
    }
  }
  return out;
}

export function toBase62(value: number, width: number): string {
  let out = '';
  let n = value;
  while (n > 0) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out.padStart(width, '0');
}

/** Public id of a form: 10 base62 characters (~59 bits), opaque and not enumerable. */
export const newFormPublicId = () => randomBase62(10);
/** Id of a block, unique within its form and stable across edits. */
export const newBlockId = () => `b_${randomBase62(10)}`;
/** Id of a choice within a choice block. */
export const newChoiceId = () => `c_${randomBase62(8)}`;
