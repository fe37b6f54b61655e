import type { Block } from '../forms/blocks';
import { fileRefusedWords, refusalKind, typesInWords } from './file-words';

describe('typesInWords', () => {
  it.each([
    [['application/pdf'], 'PDF files'],
    [['image/*'], 'images'],
    [['application/pdf', '.docx'], 'PDF or .docx files'],
    [['application/pdf', 'image/*'], 'PDF files or images'],
    [['image/png', 'image/jpeg', 'application/pdf'], 'PNG, JPEG or PDF files'],
    [['application/x-dwg'], 'DWG files'],
    [['model/*'], 'model files'],
  ])('%j → %s', (accept, words) => expect(typesInWords(accept)).toBe(words));
});

describe('fileRefusedWords', () => {
  const cv = { id: 'b1', type: 'file_upload', title: 'CV', accept: ['application/pdf'], maxSizeMb: 5 } as Block;
  it('names the file and says what to do, in the page’s words', () => {
    expect(fileRefusedWords(cv, 'big_cv.pdf', 'size', 5)).toBe(
      'The file “big_cv.pdf” is too large: this question takes files of at most 5 MB. Choose a smaller file.',
    );
    expect(fileRefusedWords(cv, 'setup.exe', 'type')).toBe(
      'The file “setup.exe” cannot be used here: this question takes PDF files. Choose another file.',
    );
    expect(fileRefusedWords(cv, undefined, 'gone')).toMatch(/^A file you chose is no longer available/);
  });
});

describe('refusalKind', () => {
  it.each([
    ["the file's bytes are exe (application/x-msdownload), not application/pdf", 'contents'],
    ['the file is HTML markup, declared as text/plain and named "page.html"', 'contents'],
    ['is not an upload of this form (or was deleted after 24 hours unused)', 'gone'],
    ['has no bytes stored yet', 'arrival'],
    ['the stored file has 10 bytes, but 20 were declared', 'arrival'],
  ])('%s → %s', (message, kind) => expect(refusalKind(message)).toBe(kind));
});
