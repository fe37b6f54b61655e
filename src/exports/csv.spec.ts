import { parse } from 'csv-parse/sync';
import type { Block } from '../forms/blocks';
import { answerCell, BOM, contentDisposition, csvLayout, csvRecord, textCell } from './csv';

describe('export CSV', () => {
  it('quotes fields only where RFC 4180 needs it, doubling quotes, and ends records with CRLF', () => {
    expect(csvRecord(['plain', 'a,b', 'say "hi"', 'two\nlines', 'cr\rhere', ''])).toBe(
      'plain,"a,b","say ""hi""","two\nlines","cr\rhere",\r\n',
    );
    const fields = ['x,"y"', 'line\r\nbreak', 'Zoë 😀', ''];
    expect(parse(csvRecord(fields))).toEqual([fields]);
  });

  it('defuses text a spreadsheet would read as a formula, and leaves numbers alone', () => {
    for (const text of ['=1+1', '+33 6', '-x', '@SUM(A1)', '\tTab', '\rCR']) expect(textCell(text)).toBe(`'${text}`);
    for (const text of ['a=b', ' =1', 'plain', 'naïve']) expect(textCell(text)).toBe(text);
    expect(answerCell(-5)).toBe('-5');
    expect(answerCell(3.25)).toBe('3.25');
    expect(answerCell('-5')).toBe("'-5"); // text that looks like a number is still text
    expect(answerCell(true)).toBe('Yes'); // as the pages say it
    expect(answerCell(false)).toBe('No');
    expect(answerCell(['Cat', 'Dog'])).toBe('Cat; Dog');
    expect(answerCell(['=cmd', 'Dog'])).toBe("'=cmd; Dog");
    expect(answerCell(undefined)).toBe('');
    expect(answerCell(null)).toBe('');
  });

  it('lays out id, submittedAt, answer blocks in form order (titles, or refs), then hidden fields', () => {
    const blocks = [
      { id: 'b1', type: 'short_text', title: '=Name', ref: 'name', required: false },
      { id: 'b2', type: 'statement', title: 'Hello', required: false },
      { id: 'b3', type: 'checkboxes', title: 'Pets', required: false, choices: [] },
      { id: 'b4', type: 'page_break', title: 'Page 2', required: false },
      { id: 'b5', type: 'number', title: 'Age', required: false },
    ] as Block[];
    const form = { blocks, hiddenFields: ['utm'] };
    const byTitle = csvLayout(form);
    expect(byTitle.head).toBe(`${BOM}id,submittedAt,'=Name,Pets,Age,utm\r\n`);
    expect(csvLayout(form, 'ref').head).toBe(`${BOM}id,submittedAt,name,b3,b5,utm\r\n`);
    expect(
      byTitle.record({
        id: 'r1',
        submittedAt: '2026-01-01T00:00:00.000Z',
        answers: { b1: 'Ann', b3: ['Cat', 'Dog'], b5: 0 },
        hidden: { utm: 'mail, spring' },
      }),
    ).toBe('r1,2026-01-01T00:00:00.000Z,Ann,Cat; Dog,0,"mail, spring"\r\n');
    expect(byTitle.record({ id: 'r2', submittedAt: '2026-01-01T00:00:01.000Z', answers: {} })).toBe(
      'r2,2026-01-01T00:00:01.000Z,,,,\r\n',
    );
  });

  it('adds status and startedAt when asked, and a links column after each file question (issue 45)', () => {
    const blocks = [
      { id: 'b1', type: 'short_text', title: 'Name', required: false },
      { id: 'b2', type: 'file_upload', title: 'CV', ref: 'cv', required: false },
    ] as Block[];
    const layout = csvLayout({ blocks }, 'id', { status: true });
    expect(layout.head).toBe(`${BOM}id,submittedAt,status,startedAt,Name,CV,CV (links)\r\n`);
    expect(csvLayout({ blocks }, 'ref').head).toBe(`${BOM}id,submittedAt,b1,cv,cv (links)\r\n`);
    const file = (name: string, url: string) => ({ uploadId: 'u', name, size: 1, contentType: 'application/pdf', url });
    expect(
      layout.record({
        id: 'r1',
        submittedAt: null,
        status: 'partial',
        startedAt: '2026-01-01T00:00:00.000Z',
        answers: { b1: 'Ann', b2: [file('=a.pdf', 'https://x/1'), file('b.pdf', 'https://x/2')] },
      }),
    ).toBe("r1,,partial,2026-01-01T00:00:00.000Z,Ann,'=a.pdf; b.pdf,https://x/1; https://x/2\r\n");
    // A completed response that did not start as a partial started when it was submitted.
    expect(layout.record({ id: 'r2', submittedAt: '2026-01-02T00:00:00.000Z', answers: {} })).toBe(
      'r2,2026-01-02T00:00:00.000Z,completed,2026-01-02T00:00:00.000Z,,,\r\n',
    );
  });

  it('names the file after the form: an ASCII fallback and the exact title as filename*', () => {
    expect(contentDisposition('Café survey', 'csv')).toBe(
      `attachment; filename="Cafe survey.csv"; filename*=UTF-8''Caf%C3%A9%20survey.csv`,
    );
    expect(contentDisposition('日本語 (draft)', 'ndjson')).toBe(
      `attachment; filename="_ (draft).ndjson"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E%20%28draft%29.ndjson`,
    );
    // Nothing that could end the header's quoted string, or a path.
    expect(contentDisposition('a/b\\c"d\r\ne;%', 'csv')).toBe(
      `attachment; filename="a b c d e__.csv"; filename*=UTF-8''a%20b%20c%20d%20e%3B%25.csv`,
    );
    expect(contentDisposition('///', 'csv')).toBe(
      `attachment; filename="responses.csv"; filename*=UTF-8''responses.csv`,
    );
  });
});
