/**
 * The CSV of an export written by PostgreSQL's `COPY ... TO STDOUT WITH (FORMAT csv)`: one SQL
 * expression per cell that is the cell csvLayout().record() writes (the reference, kept in csv.ts
 * and held equal to this by the export's tests), which COPY then quotes as RFC 4180 does (a comma,
 * a quote, CR or LF; quotes doubled). COPY writes an empty text as "", so an empty cell is NULL
 * here (COPY's empty field); its rows end in LF, which copy-rows.ts writes as CRLF. COPY takes no
 * parameters: every value is a literal (escapeLiteral), the filter's placeholders included
 * (withLiterals). PostgreSQL formats while the service writes, and the service handles bytes,
 * never a string per response. Forms with a file question are written by the service instead
 * (csvLayout): their cells hold download links, signed with a key that never enters SQL.
 */
import { escapeLiteral } from 'pg';
import { Block, isFileBlock, NUMERIC_TYPES, takesAnswer } from '../forms/blocks';
import { CsvForm, csvVariables, textCell } from './csv';

/** A first character a spreadsheet reads as the start of a formula (see textCell). */
const FORMULA_START = `('=', '+', '-', '@', chr(9), chr(13))`;

/** A value as a SQL literal: text, a number or a boolean as text (its placeholder's cast follows), a list as text[]. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Array.isArray(value)) return `ARRAY[${value.map((v) => escapeLiteral(String(v))).join(', ')}]::text[]`;
  return escapeLiteral(String(value));
}

/**
 * `sql` with each placeholder $n replaced by the literal of params[n - 1]. `sql` must hold no other
 * `$<digits>`: the filter's SQL never holds a value in its text (see responseFilterSql).
 */
export function withLiterals(sql: string, params: unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => `(${literal(params[Number(n) - 1])})`);
}

/** A text as textCell() writes it: a leading apostrophe before a formula; '' and NULL as NULL. `t` is read more than once. */
function textField(t: string): string {
  return `CASE WHEN left(${t}, 1) IN ${FORMULA_START} THEN '''' || ${t} ELSE NULLIF(${t}, '') END`;
}

/** A choice's id mapped to `field` of its label, worked out here once (labels are the form's, not the respondent's). */
function labelCase(value: string, block: Block, field: (label: string) => string): string {
  const choices = block.choices ?? [];
  if (!choices.length) return 'NULL';
  return `CASE ${value} ${choices.map((c) => `WHEN ${literal(c.id)} THEN ${literal(field(c.label))}::text`).join(' ')} END`;
}

/**
 * A block's answer as the inner query takes it out of the row, once: `t<i>` its text (->>: a
 * choice id, a number or true/false as JSON writes them, a string); for checkboxes the ticked
 * choices' labels joined by "; " in the order stored (unknown choices left out).
 */
function taken(i: number, block: Block, alias: string): string {
  const key = literal(block.id);
  const a = `${alias}.answers -> ${key}`;
  if (block.type === 'matrix') {
    // One column per row (t<i>_<j>): its column's label, or (multiple) labels joined by "; " in the order stored.
    const columns = { ...block, choices: block.columns };
    return (block.rows ?? [])
      .map((r, j) => {
        const cell = `${a} -> ${literal(r.id)}`;
        return `(SELECT string_agg(${labelCase('x.e', columns, (label) => label)}, '; ' ORDER BY x.o)
      FROM jsonb_array_elements_text(CASE jsonb_typeof(${cell}) WHEN 'array' THEN ${cell} WHEN 'string' THEN jsonb_build_array(${cell}) END) WITH ORDINALITY x(e, o)) AS t${i}_${j}`;
      })
      .join(', ');
  }
  if (block.type !== 'checkboxes' && block.type !== 'ranking') return `${alias}.answers ->> ${key} AS t${i}`;
  return `(SELECT string_agg(${labelCase('x.e', block, (label) => label)}, '; ' ORDER BY x.o)
      FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(${a}) = 'array' THEN ${a} END) WITH ORDINALITY x(e, o)) AS t${i}`;
}

/**
 * The cell of one block's answer from what `taken` took, as answerCell() writes the answer
 * get_response shows. Answers are stored as their block's type requires (checked on every
 * write), so the type says how: choices by label (an unknown choice: empty), numbers as JSON
 * writes them, yes/no as Yes/No, checkboxes' joined labels and every other answer (texts, dates)
 * as text.
 */
function answerField(i: number, block: Block): string {
  const t = `v.t${i}`;
  if (block.type === 'matrix') return (block.rows ?? []).map((_, j) => textField(`${t}_${j}`)).join(', ');
  if (block.type === 'multiple_choice' || block.type === 'dropdown')
    return `NULLIF(${labelCase(t, block, textCell)}, '')`;
  if (NUMERIC_TYPES.includes(block.type)) return t;
  if (block.type === 'yes_no') return `CASE ${t} WHEN 'true' THEN 'Yes' WHEN 'false' THEN 'No' END`;
  return textField(t);
}

/** A timestamptz as RFC 3339 in UTC with milliseconds, as toISOString() writes it. */
const iso = (t: string) => `to_char(${t} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The COPY of the records of the responses `where` selects (a condition over the row r, values as
 * literals), in seq order. The answers and hidden values are taken out of their jsonb once per
 * row, by a subquery kept apart with OFFSET 0 (else the planner copies its expressions into every
 * place the cells read them); the cells are then plain expressions over its columns. `status`:
 * the status and startedAt columns (csvLayout's), of completed responses.
 */
export function csvCopySql(form: CsvForm, where: string, opts: { status?: boolean } = {}): string {
  const blocks = form.blocks.filter((b) => takesAnswer(b.type));
  if (blocks.some(isFileBlock)) throw new Error('a form with files is written by csvLayout');
  const hidden = form.hiddenFields ?? [];
  const variables = csvVariables(form) ?? [];
  const columns = [
    `r.seq`,
    `r.id`,
    `r.submitted_at`,
    ...(opts.status ? [`r.started_at`] : []),
    ...blocks.map((b, i) => taken(i, b, 'r')),
    ...hidden.map((name, i) => `r.hidden ->> ${literal(name)} AS h${i}`),
    // Variables (issue 46): numbers as JSON writes them, texts as text.
    ...variables.map((name, i) => `r.variables -> ${literal(name)} AS x${i}`),
    ...(csvVariables(form) ? ['r.ending'] : []),
  ];
  const cells = [
    `v.id`,
    iso('v.submitted_at'),
    ...(opts.status ? [`'completed'`, iso('COALESCE(v.started_at, v.submitted_at)')] : []),
    ...blocks.map((b, i) => answerField(i, b)),
    ...hidden.map((_, i) => textField(`v.h${i}`)),
    ...variables.map(
      (_, i) =>
        `CASE jsonb_typeof(v.x${i}) WHEN 'number' THEN (v.x${i})::text WHEN 'string' THEN ${textField(`(v.x${i} #>> '{}')`)} END`,
    ),
    ...(csvVariables(form) ? [textField('v.ending')] : []),
  ];
  return `COPY (SELECT ${cells.join(', ')}
      FROM (SELECT ${columns.join(', ')} FROM responses r WHERE ${where} ORDER BY r.seq OFFSET 0) v
     ORDER BY v.seq) TO STDOUT WITH (FORMAT csv)`;
}
