/**
 * The CSV records of an export written by PostgreSQL: one SQL expression per response that is the
 * record csvLayout().record() writes for it (the reference, kept in csv.ts and held equal to this
 * by the export's tests), so that a batch reaches the service as one string rather than a thousand
 * parsed rows. The service then allocates almost nothing per response (which kept the old
 * generation growing by a hundred MiB during a big export) and PostgreSQL formats while the
 * service writes.
 */
import { Block, takesAnswer } from '../forms/blocks';
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
 * The field of one block's answer, `a` its stored jsonb (a column), as answerCell() writes the
 * answer get_response shows: choices by label (an unknown choice: empty), checkboxes' labels
 * joined by "; " in the order stored, numbers and yes/no as JSON writes them, text defused.
 */
function answerField(a: string, block: Block, params: unknown[]): string {
  if (block.type === 'multiple_choice' || block.type === 'dropdown') {
    const id = `CASE WHEN jsonb_typeof(${a}) = 'string' THEN ${a} #>> '{}' END`;
    return labelCase(id, block, params, (label) => csvRecord([textCell(label)]).slice(0, -2));
  }
  if (block.type === 'checkboxes') {
    const labels = `(SELECT string_agg(${labelCase('x.e', block, params, (label) => label)}, '; ' ORDER BY x.o)
        FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(${a}) = 'array' THEN ${a} END) WITH ORDINALITY x(e, o))`;
    return `(SELECT ${textField('j.t')} FROM (SELECT ${labels} AS t) j)`;
  }
  return `CASE jsonb_typeof(${a}) WHEN 'number' THEN ${a} #>> '{}' WHEN 'boolean' THEN ${a} #>> '{}'
    WHEN 'string' THEN (SELECT ${textField('j.t')} FROM (SELECT ${a} #>> '{}' AS t) j) END`;
}

/**
 * The SELECT list and FROM of a batch's records: `line` is each response's record (CRLF ended),
 * `seq` its order. The answers and hidden values are taken out of their jsonb once per row (the
 * lateral subquery, kept apart by OFFSET 0 so the planner does not copy its expressions into every
 * place they are read). Placeholders are pushed onto `params`.
 */
export function csvLinesSql(form: CsvForm, params: unknown[], alias = 'r'): { select: string; from: string } {
  const blocks = form.blocks.filter((b) => takesAnswer(b.type));
  const hidden = form.hiddenFields ?? [];
  const taken = [
    ...blocks.map((b, i) => `${alias}.answers -> ${bind(params, b.id)} AS a${i}`),
    ...hidden.map((name, i) => `${alias}.hidden ->> ${bind(params, name)} AS h${i}`),
  ];
  const fields = [
    `${alias}.id::text`,
    `to_char(${alias}.submitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
    ...blocks.map((b, i) => `COALESCE(${answerField(`v.a${i}`, b, params)}, '')`),
    ...hidden.map((_, i) => `COALESCE(${textField(`v.h${i}`)}, '')`),
  ];
  return {
    select: `${alias}.seq, ${fields.join(` || ',' || `)} || ${CRLF} AS line`,
    from: taken.length
      ? `responses ${alias} CROSS JOIN LATERAL (SELECT ${taken.join(', ')} OFFSET 0) v`
      : `responses ${alias}`,
  };
}
