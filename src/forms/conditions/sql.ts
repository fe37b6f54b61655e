import { Condition, ENDING_VARIABLE, isBlockLeaf, isVariableLeaf, Leaf } from './condition.types';
import { FOLD_FROM, FOLD_TO, foldCase } from './fold';

/** foldCase in SQL (the two constants hold no quote). */
const FOLD_SQL = (text: string) => `translate(lower(${text}), '${FOLD_FROM}', '${FOLD_TO}')`;

/**
 * A checked condition (blocks by id, choices by id) as a SQL boolean over a row of `responses`
 * (its `answers` and `hidden` jsonb columns, NOT NULL, under `alias`): the evaluator's table (evaluate.ts)
 * read as SQL, for response filters. Values are bound parameters, pushed onto `params` and named
 * $n, never written into the text.
 *
 * Two-valued like the evaluator: a block not answered (absent, null, "" or []) or a hidden field
 * not given makes `answered` false, `not_answered` true and every other operator false, negated
 * ones included; each leaf is guarded by that presence test, so no leaf is NULL and `not` negates
 * the whole condition.
 */
export function conditionSql(condition: Condition, params: unknown[], alias = 'r'): string {
  if ('all' in condition)
    return condition.all.length
      ? `(${condition.all.map((c) => conditionSql(c, params, alias)).join(' AND ')})`
      : 'TRUE';
  if ('any' in condition)
    return condition.any.length
      ? `(${condition.any.map((c) => conditionSql(c, params, alias)).join(' OR ')})`
      : 'FALSE';
  if ('not' in condition) return `(NOT ${conditionSql(condition.not, params, alias)})`;
  return leafSql(condition, params, alias);
}

/** Pushes a value and returns its placeholder. */
function bind(params: unknown[], value: unknown, cast: string): string {
  return `$${params.push(value)}::${cast}`;
}

function leafSql(leaf: Leaf, params: unknown[], alias: string): string {
  // Variables (issue 46) are NULL on responses of forms without any: every leaf on them is then not answered.
  const [column, name] = isBlockLeaf(leaf)
    ? [`${alias}.answers`, leaf.block]
    : isVariableLeaf(leaf)
      ? leaf.variable === ENDING_VARIABLE
        ? [
            `CASE WHEN ${alias}.ending IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('${ENDING_VARIABLE}', ${alias}.ending) END`,
            leaf.variable,
          ]
        : [`COALESCE(${alias}.variables, '{}'::jsonb)`, leaf.variable]
      : [`${alias}.hidden`, leaf.hidden];
  const v = leaf.value;
  const choice = isBlockLeaf(leaf) ? leaf.choice : undefined;
  const row = isBlockLeaf(leaf) ? leaf.row : undefined;
  if (leaf.op === 'equals' && !Array.isArray(v) && v !== undefined && choice === undefined) {
    // One value: containment of { name: value } ({ name: { row: value } } for a matrix row), exact
    // for a scalar (a string is not contained in a list, 4 is 4.0), as cheap as a hand-written ->>
    // comparison, and servable by a GIN index. "" is no answer: equal to nothing.
    if (v === '') return 'false';
    const contained = row === undefined ? { [name]: v } : { [name]: { [row]: v } };
    const value = bind(params, JSON.stringify(contained), 'jsonb');
    // A variable: the column itself (NULL on responses of forms that compute nothing), so that its
    // GIN index (partial: variables IS NOT NULL) serves it too; never NULL, for `not`.
    if (isVariableLeaf(leaf) && leaf.variable !== ENDING_VARIABLE)
      return `(${alias}.variables IS NOT NULL AND ${alias}.variables @> ${value})`;
    return `(${column} @> ${value})`;
  }
  // A ranking's choice: its place (1 first) as a jsonb number, NULL when not ranked (placeOr); the
  // block and the choice are one parameter, so that a leaf keeps to 3.
  // A matrix's row: that row's column(s) (NULL when not answered), the block and the row one parameter too.
  const pair = choice === undefined && row === undefined ? '' : bind(params, [name, choice ?? row], 'text[]');
  const answer = pair === '' ? `${column} -> ${bind(params, name, 'text')}` : `${column} -> (${pair})[1]`;
  const x =
    choice === undefined
      ? row === undefined
        ? answer
        : `(${answer} -> (${pair})[2])`
      : `to_jsonb((SELECT p.o FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(${answer}) = 'array' THEN ${answer} END) WITH ORDINALITY p(e, o) WHERE p.e = (${pair})[2] LIMIT 1))`;
  // A place equals: the ranking holds the choice (containment, servable by the GIN index), at that place.
  if (choice !== undefined && leaf.op === 'equals' && !Array.isArray(v))
    return `(${column} @> ${bind(params, JSON.stringify({ [name]: [choice] }), 'jsonb')} AND (${x}) = ${bind(params, JSON.stringify(v), 'jsonb')})`;
  // NULL (absent) or a missing value: the same as the evaluator's isMissing.
  const present = `COALESCE((${x}) NOT IN ('null'::jsonb, '""'::jsonb, '[]'::jsonb), false)`;
  if (leaf.op === 'answered') return `(${present})`;
  if (leaf.op === 'not_answered') return `(NOT ${present})`;
  let positive: string;
  // not_equals and not_contains: an answer, and not the positive one
  const negate = leaf.op === 'not_equals' || leaf.op === 'not_contains';
  switch (leaf.op) {
    case 'equals':
    case 'not_equals':
      positive = Array.isArray(v)
        ? // checkboxes: the exact set ticked (containment both ways: the same set, in any order)
          `(jsonb_typeof(${x}) = 'array' AND (${x}) @> ${bind(params, JSON.stringify(v), 'jsonb')} AND $${params.length}::jsonb @> (${x}))`
        : `(${x}) = ${bind(params, JSON.stringify(v), 'jsonb')}`;
      break;
    case 'in': {
      const list = Array.isArray(v) ? v : [];
      const texts = list.filter((e): e is string => typeof e === 'string');
      // checkboxes: at least one of the list is ticked; one value: it is in the list
      positive = `(CASE WHEN jsonb_typeof(${x}) = 'array' THEN (${x}) ?| ${bind(params, texts, 'text[]')}
                   ELSE ${bind(params, JSON.stringify(list), 'jsonb')} @> jsonb_build_array(${x}) END)`;
      break;
    }
    case 'contains':
    case 'not_contains':
      // text: a substring ignoring case (the value folded here, the answer by the same folding in
      // SQL: see foldCase); checkboxes: that choice is ticked
      positive =
        typeof v === 'string'
          ? `(CASE jsonb_typeof(${x}) WHEN 'array' THEN (${x}) ? ${bind(params, v, 'text')}
                  WHEN 'string' THEN strpos(${FOLD_SQL(`(${x}) #>> '{}'`)}, ${bind(params, foldCase(v), 'text')}) > 0 ELSE false END)`
          : 'false';
      break;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      positive = compareSql(x, leaf.op, v, params);
      break;
  }
  return negate ? `(${present} AND NOT ${positive})` : `(${present} AND ${positive})`;
}

const COMPARISONS = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** Numbers as numbers, dates (YYYY-MM-DD) as text in code-point order; false when the types differ. */
function compareSql(x: string, op: keyof typeof COMPARISONS, v: unknown, params: unknown[]): string {
  const sign = COMPARISONS[op];
  if (typeof v === 'number')
    return `(CASE WHEN jsonb_typeof(${x}) = 'number' THEN ((${x})::numeric ${sign} ${bind(params, v, 'numeric')}) ELSE false END)`;
  if (typeof v === 'string')
    return `(CASE WHEN jsonb_typeof(${x}) = 'string' THEN ((${x}) #>> '{}') COLLATE "C" ${sign} ${bind(params, v, 'text')} ELSE false END)`;
  return 'false';
}
