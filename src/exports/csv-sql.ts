/**
 * The CSV records of an export written by PostgreSQL: one SQL expression per response that is the
 * record csvLayout().record() writes for it (the reference, kept in csv.ts and held equal to this
 * by the export's tests), so that a batch reaches the service as one string rather than a thousand
 * parsed rows. The service then allocates almost nothing per response (which kept the old
 * generation growing by a hundred MiB during a big export) and PostgreSQL formats while the
 * service writes.
 */
import { Block, NUMERIC_TYPES, takesAnswer } from '../forms/blocks';
import { csvRecord, CsvForm, textCell } from './csv';

const CRLF = `chr(13) || chr(10)`;
/** A first character a spreadsheet reads as the start of a formula (see textCell). */
const FORMULA_START = `('=', '+', '-', '@', chr(9), chr(13))`;
/** Characters that make RFC 4180 quote a field (see csvRecord). */
const NEEDS_QUOTES = `('[",' || chr(10) || chr(13) || ']')`;

/** Pushes a text value and returns its placeholder. */
function bind(params: unknown[], value: string): string {
  return `$${params.push(value)}::text`;
}

/**
 * A text as a field, as csvRecord(textCell(t)) writes it: a leading apostrophe before a formula,
 * quoted (quotes doubled) when it holds a comma, a quote, CR or LF. `t` is a column (read more
 * than once); NULL stays NULL (an empty field).
 */
function textField(t: string): string {
  const guard = `CASE WHEN left(${t}, 1) IN ${FORMULA_START} THEN '''' ELSE '' END`;
  return `CASE WHEN ${t} ~ ${NEEDS_QUOTES} THEN '"' || ${guard} || replace(${t}, '"', '""') || '"' ELSE ${guard} || ${t} END`;
}

/** A choice's id mapped to its label's field, worked out here once (labels are the form's, not the respondent's). */
function labelCase(value: string, block: Block, params: unknown[], field: (label: string) => string): string {
  const choices = block.choices ?? [];
  if (!choices.length) return 'NULL';
  return `CASE ${value} ${choices.map((c) => `WHEN ${bind(params, c.id)} THEN ${bind(params, field(c.label))}`).join(' ')} END`;
}

/**
 * A block's answer as the inner query takes it out of the row, once: `t<i>` its text (->>: a
 * choice id, a number or true/false as JSON writes them, a string); for checkboxes the ticked
 * choices' labels joined by "; " in the order stored (unknown choices left out), for files their names.
 */
function taken(i: number, block: Block, params: unknown[], alias: string): string {
  const key = bind(params, block.id);
  const a = `${alias}.answers -> ${key}`;
  // Files: their names (as uploaded, cleaned), joined as checkbox labels are.
  if (block.type === 'file_upload')
    return `(SELECT string_agg(u.name, '; ' ORDER BY x.o)
      FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(${a}) = 'array' THEN ${a} END) WITH ORDINALITY x(e, o)
      JOIN uploads u ON u.id = x.e) AS t${i}`;
  if (block.type !== 'checkboxes') return `${alias}.answers ->> ${key} AS t${i}`;
  return `(SELECT string_agg(${labelCase('x.e', block, params, (label) => label)}, '; ' ORDER BY x.o)
      FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(${a}) = 'array' THEN ${a} END) WITH ORDINALITY x(e, o)) AS t${i}`;
}

/**
 * The field of one block's answer from what `taken` took, as answerCell() writes the answer
 * get_response shows. Answers are stored as their block's type requires (checked on every
 * write), so the type says how: choices by label (an unknown choice: empty), numbers as JSON
 * writes them, yes/no as Yes/No, checkboxes' joined labels and every other answer (texts, dates)
 * as text.
 */
function answerField(i: number, block: Block, params: unknown[]): string {
  const t = `v.t${i}`;
  if (block.type === 'multiple_choice' || block.type === 'dropdown') {
    return labelCase(t, block, params, (label) => csvRecord([textCell(label)]).slice(0, -2));
  }
  if (NUMERIC_TYPES.includes(block.type)) return t;
  if (block.type === 'yes_no') return `CASE ${t} WHEN 'true' THEN 'Yes' WHEN 'false' THEN 'No' END`;
  return textField(t);
}

/**
 * The SELECT list and FROM of a batch's records: `line` is each response's record (CRLF ended),
 * `seq` its order. The answers and hidden values are taken out of their jsonb once per row, by a
 * subquery kept apart with OFFSET 0 (else the planner copies its expressions into every place the
 * fields read them); the fields are then plain expressions over its columns, joined by one
 * concat_ws per 90 fields (a chain of || would copy the line once per field). Placeholders are
 * pushed onto `params`; `where` is the batch's condition over the row r.
 */
export function csvLinesSql(
  form: CsvForm,
  params: unknown[],
  alias = 'r',
): { select: string; from: (where: string) => string } {
  const blocks = form.blocks.filter((b) => takesAnswer(b.type));
  const hidden = form.hiddenFields ?? [];
  const columns = [
    `${alias}.seq`,
    `${alias}.id`,
    `${alias}.submitted_at`,
    ...blocks.map((b, i) => taken(i, b, params, alias)),
    ...hidden.map((name, i) => `${alias}.hidden ->> ${bind(params, name)} AS h${i}`),
  ];
  const fields = [
    `v.id::text`,
    `to_char(v.submitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
    ...blocks.map((b, i) => `COALESCE(${answerField(i, b, params)}, '')`),
    ...hidden.map((_, i) => `COALESCE(${textField(`v.h${i}`)}, '')`),
  ];
  // A function takes at most 100 arguments.
  const groups: string[] = [];
  for (let i = 0; i < fields.length; i += 90) groups.push(`concat_ws(',', ${fields.slice(i, i + 90).join(', ')})`);
  return {
    select: `v.seq, concat_ws(',', ${groups.join(', ')}) || ${CRLF} AS line`,
    from: (where) => `(SELECT ${columns.join(', ')} FROM responses ${alias} WHERE ${where} OFFSET 0) v`,
  };
}
