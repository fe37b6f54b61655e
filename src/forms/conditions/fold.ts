/** The case folding of `contains` (see foldCase), shared by the evaluator, SQL and the respondent page's script. */

/**
 * Lowercase letters that are not their letter's case fold (Greek final sigma and the symbol forms
 * of Greek letters, the long s, the micro sign, the iota subscript), and what they fold to.
 */
export const FOLD_FROM = 'ςϐϑϕϖϰϱϵẛµſ\u0345';
export const FOLD_TO = 'σβθφπκρεṡμsι';

/**
 * How `contains` ignores case, the same in the evaluator and in SQL: each code point lowercased on
 * its own (Unicode's simple mapping: Σ is σ wherever it stands, İ is i, ẞ is ß; no letter becomes
 * two), then FOLD_FROM to FOLD_TO, so σας, ΣΑΣ and σασ are one word. PostgreSQL's lower() on a
 * UTF-8 database lowercases code point by code point too, so SQL computes
 * translate(lower(x), FOLD_FROM, FOLD_TO) (sql.ts). JavaScript's toLowerCase() alone would not do:
 * it lowercases a final Σ to ς and İ to two code points. No normalization: é and e + U+0301 differ.
 */
export function foldCase(s: string): string {
  let out = '';
  for (const c of s) {
    const lower = String.fromCodePoint(c.toLowerCase().codePointAt(0)!);
    const i = FOLD_FROM.indexOf(lower);
    out += i < 0 ? lower : FOLD_TO[i];
  }
  return out;
}
