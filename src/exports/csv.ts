/**
 * The CSV of an export (RFC 4180, UTF-8 with a byte order mark): its columns, its cells, and the
 * file name it is offered under.
 */
import type { FileAnswer } from '../files/file-answers';
import { Block, isFileBlock, takesAnswer } from '../forms/blocks';
import type { FormCompute } from '../forms/compute';
import { computes, formVariables } from '../forms/form-logic';
import type { AnswersBy, ResponseView } from '../responses/responses.service';

/** What Excel needs to read a CSV file as UTF-8 rather than the machine's code page. */
export const BOM = '\uFEFF';
/** RFC 4180 ends records with CRLF. */
const EOL = '\r\n';

/** What the CSV needs of a form: its blocks in order and its hidden fields. */
export interface CsvForm {
  blocks: Block[];
  hiddenFields?: readonly string[] | null;
  /** Forms that compute (issue 46): a column per variable, then "ending". */
  compute?: FormCompute | null;
}

/** The variables a form's CSV has a column for (issue 46), in form order; none when it computes nothing. */
export function csvVariables(form: CsvForm): string[] | undefined {
  return computes(form) ? formVariables(form).map((v) => v.name) : undefined;
}

/** The columns an export of partial responses adds after submittedAt (issue 45): `completed` or `partial`, and when it started. */
export const STATUS_COLUMNS = ['status', 'startedAt'] as const;

/** The header of a matrix row's column: one column per row (its column's label, or labels joined by "; "). */
export const matrixHeader = (header: string, row: string) => `${header}: ${row}`;

/** The header of the column after a file question's, which holds its files' download links (issue 45). */
export const linksHeader = (header: string) => `${header} (links)`;

/**
 * The columns of a form's CSV and how to write one response as a record: id, submittedAt (with
 * `status`: then status and startedAt), one column per block that takes an answer, in form order,
 * headed by its title (by its ref with answersBy "ref"; a block without one by its id), a file
 * question followed by the column of its files' links, then one per hidden field, headed by its
 * name. Responses are read as get_response shows them, keyed by block id (choices by label, files
 * as `{ name, url }`). Downloads of forms without file questions have PostgreSQL write the
 * records (csv-sql.ts); `record` is the reference those are held to, cell for cell, by the
 * export's tests. On a form that computes (issue 46), one column per variable and "ending" come last.
 */
export function csvLayout(form: CsvForm, answersBy: AnswersBy = 'id', opts: { status?: boolean } = {}) {
  const blocks = form.blocks.filter((b) => takesAnswer(b.type));
  const hidden = form.hiddenFields ?? [];
  const variables = csvVariables(form);
  const header = [
    'id',
    'submittedAt',
    ...(opts.status ? STATUS_COLUMNS : []),
    ...blocks.flatMap((b) => {
      const head = answersBy === 'ref' ? (b.ref ?? b.id) : b.title;
      if (b.type === 'matrix') return (b.rows ?? []).map((r) => matrixHeader(head, r.label));
      return isFileBlock(b) ? [head, linksHeader(head)] : [head];
    }),
    ...hidden,
    ...(variables ? [...variables, 'ending'] : []),
  ];
  return {
    /** The byte order mark and the header record. */
    head: BOM + csvRecord(header.map(textCell)),
    record(view: ResponseView): string {
      return csvRecord([
        view.id,
        view.submittedAt ?? '',
        // A completed response that did not start as a partial started when it was submitted.
        ...(opts.status ? [view.status ?? 'completed', view.startedAt ?? view.submittedAt ?? ''] : []),
        ...blocks.flatMap((b) =>
          b.type === 'matrix'
            ? (b.rows ?? []).map((r) =>
                answerCell((view.answers[b.id] as Record<string, unknown> | undefined)?.[r.label]),
              )
            : isFileBlock(b)
              ? filesCells(view.answers[b.id])
              : [answerCell(view.answers[b.id])],
        ),
        ...hidden.map((name) => textCell(view.hidden?.[name])),
        ...(variables
          ? [...variables.map((name) => answerCell(view.variables?.[name])), textCell(view.ending ?? undefined)]
          : []),
      ]);
    },
  };
}

/** A file answer as read (`[{ name, url, ... }]`) as two cells: the names, and the links, each joined by "; ". */
export function filesCells(value: unknown): [string, string] {
  const files = (Array.isArray(value) ? value : []).filter(
    (f): f is FileAnswer => typeof f === 'object' && f !== null && typeof (f as FileAnswer).name === 'string',
  );
  return [
    textCell(files.map((f) => f.name).join('; ')),
    files
      .map((f) => f.url)
      .filter(Boolean)
      .join('; '),
  ];
}

/** One record: fields quoted where RFC 4180 needs it (a comma, a quote, CR or LF), quotes doubled. */
export function csvRecord(fields: string[]): string {
  return fields.map((f) => (/[",\r\n]/.test(f) ? `"${f.replaceAll('"', '""')}"` : f)).join(',') + EOL;
}

/** An answer as a cell: numbers as numbers, yes/no as Yes/No (as the pages say), checkboxes' labels joined by "; ". */
export function answerCell(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  if (Array.isArray(value)) return textCell(value.map(String).join('; '));
  return textCell(String(value));
}

/**
 * Text as a cell, defused for spreadsheets (OWASP, CSV injection): text starting with = + - @, a
 * tab or a carriage return would be read as a formula, so it gets a leading apostrophe, which a
 * spreadsheet shows as text and does not display. Numbers never pass here: -3 stays -3.
 */
export function textCell(text: string | undefined): string {
  if (!text) return '';
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

/**
 * A Content-Disposition offering the file under the form's title: an ASCII name for old clients
 * (accents dropped, anything else unsafe in a file name replaced) and the exact title as
 * filename* (RFC 6266, RFC 8187), which browsers prefer.
 */
export function contentDisposition(title: string, extension: string): string {
  const base =
    title
      // eslint-disable-next-line no-control-regex -- control characters are what this removes
      .replace(/[\u0000-\u001f\u007f/\\:*?"<>|]+/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, 120) || 'responses';
  const ascii =
    base
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .replace(/[^\x20-\x7e]+/g, '_')
      .replace(/[%;]/g, '_')
      .trim() || 'responses';
  const encoded = encodeURIComponent(`${base}.${extension}`).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}.${extension}"; filename*=UTF-8''${encoded}`;
}
