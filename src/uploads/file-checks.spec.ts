import { accepts, cleanFilename, markupIn, markupRefusal, normalizeContentType, typeMismatch } from './file-checks';

const PDF = Buffer.from('%PDF-1.7\n%âãÏÓ\n');
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const EXE = Buffer.from('4d5a90000300000004000000ffff0000', 'hex');
const ZIP = Buffer.from('504b0304140000000800', 'hex');

describe('cleanFilename', () => {
  it('keeps the last path segment and drops control, format and bidi characters', () => {
    expect(cleanFilename('../../etc/passwd')).toBe('passwd');
    expect(cleanFilename('C:\\Users\\me\\cv.pdf')).toBe('cv.pdf');
    expect(cleanFilename('invoice\u202Efdp.exe')).toBe('invoicefdp.exe');
    expect(cleanFilename('a\u0000b\r\n.pdf')).toBe('ab.pdf');
    expect(cleanFilename('  two   spaces\t.pdf ')).toBe('two spaces.pdf'); // a tab is a control character
    expect(cleanFilename('...hidden')).toBe('hidden');
    expect(cleanFilename('../')).toBe('');
  });

  it('cuts a long name to 255 characters, keeping its extension and whole characters', () => {
    const long = cleanFilename(`${'a'.repeat(5000)}.pdf`);
    expect(long).toHaveLength(255);
    expect(long.endsWith('.pdf')).toBe(true);
    const emoji = cleanFilename(`${'😀'.repeat(300)}.png`);
    expect(emoji.length).toBeLessThanOrEqual(255);
    expect(emoji.endsWith('.png')).toBe(true);
    expect(emoji).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });
});

describe('normalizeContentType and accepts', () => {
  it('lowercases, drops parameters, folds aliases, refuses what is no MIME type', () => {
    expect(normalizeContentType('Text/CSV; charset=utf-8')).toBe('text/csv');
    expect(normalizeContentType('image/jpg')).toBe('image/jpeg');
    expect(normalizeContentType('pdf')).toBeUndefined();
    expect(normalizeContentType('a/b\r\nX-Evil: 1')).toBeUndefined();
  });

  it('takes a type, a wildcard or an extension; nothing listed takes anything', () => {
    expect(accepts(undefined, 'application/x-anything', 'a.bin')).toBe(true);
    expect(accepts(['image/*'], 'image/png', 'a.png')).toBe(true);
    expect(accepts(['image/*'], 'application/pdf', 'a.pdf')).toBe(false);
    expect(accepts(['application/pdf'], 'application/pdf', 'a')).toBe(true);
    expect(accepts(['.docx'], 'application/octet-stream', 'CV.DOCX')).toBe(true);
    expect(accepts(['.docx'], 'application/octet-stream', 'cv.doc')).toBe(false);
  });
});

describe('typeMismatch', () => {
  it('takes bytes that are the declared type', () => {
    expect(typeMismatch(PDF, 'application/pdf', 'cv.pdf')).toBeUndefined();
    expect(typeMismatch(PNG, 'image/png', 'a.png')).toBeUndefined();
    expect(
      typeMismatch(ZIP, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'cv.docx'),
    ).toBeUndefined();
  });

  it('refuses an .exe named .pdf and a PNG declared as a PDF', () => {
    expect(typeMismatch(EXE, 'application/pdf', 'cv.pdf')).toMatch(/exe/);
    expect(typeMismatch(PNG, 'application/pdf', 'cv.pdf')).toBe('is not a PDF: its contents are a PNG image (png)');
  });

  it('refuses HTML or SVG unless declared and named as such', () => {
    const html = Buffer.from('\ufeff  <!doctype HTML><script>alert(1)</script>');
    expect(typeMismatch(html, 'image/png', 'cat.png')).toMatch(/HTML/);
    expect(typeMismatch(html, 'text/plain', 'notes.txt')).toMatch(/HTML/);
    expect(typeMismatch(html, 'text/html', 'cat.png')).toMatch(/HTML/);
    expect(typeMismatch(html, 'text/html', 'page.html')).toBeUndefined();
    const svg = Buffer.from('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>');
    expect(typeMismatch(svg, 'image/png', 'logo.png')).toMatch(/SVG/);
    expect(typeMismatch(svg, 'image/svg+xml', 'logo.svg')).toBeUndefined();
  });

  it('takes text formats it cannot sniff by their declared type, only when the bytes are text', () => {
    expect(typeMismatch(Buffer.from('a,b\n1,2\n'), 'text/csv', 'a.csv')).toBeUndefined();
    expect(typeMismatch(Buffer.from('{"a":1}'), 'application/json', 'a.json')).toBeUndefined();
    expect(typeMismatch(PDF, 'text/csv', 'a.csv')).toMatch(/pdf/);
    expect(typeMismatch(Buffer.from([1, 0, 2, 3]), 'text/plain', 'a.txt')).toMatch(/not text/);
    expect(typeMismatch(Buffer.from('plain words'), 'application/pdf', 'a.pdf')).toMatch(/not those of/);
  });

  it('takes bytes of no known signature under a type that has none, and anything but markup as octet-stream', () => {
    const unknown = Buffer.from([0x41, 0x43, 0x31, 0x30, 0x33, 0x32, 0, 0, 7, 9]); // a DWG's first bytes
    expect(typeMismatch(unknown, 'image/vnd.dwg', 'plan.dwg')).toMatch(/not those of/);
    expect(typeMismatch(unknown, 'application/acad', 'plan.dwg')).toBeUndefined();
    expect(typeMismatch(unknown, 'application/octet-stream', 'plan.dwg')).toBeUndefined();
    expect(typeMismatch(EXE, 'application/octet-stream', 'tool.exe')).toBeUndefined();
    expect(typeMismatch(Buffer.from('<html><script>1</script>'), 'application/octet-stream', 'a.bin')).toMatch(/HTML/);
  });
});

describe('markup (issue 45, item 6.3)', () => {
  it('finds markup by its opening, prefixed or namespaced, and in binary polyglots; not text that quotes it', () => {
    const xhtml = '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body onload="x()"/></html>';
    expect(markupIn(Buffer.from(xhtml))).toBe('html');
    expect(markupIn(Buffer.from('<x:html xmlns:x="http://www.w3.org/1999/xhtml"/>'))).toBe('html');
    expect(markupIn(Buffer.from('  <div><img src=x onerror=alert(1)></div>'))).toBe('html');
    expect(markupIn(Buffer.from('<svg:svg xmlns:svg="http://www.w3.org/2000/svg" onload="x()"/>'))).toBe('svg');
    expect(markupIn(Buffer.from('<!-- a --><?xml version="1.0"?><invoice/>'))).toBe('xml');
    expect(markupIn(Buffer.from('\ufeff<html><script>1</script>', 'utf16le'))).toBe('html');
    expect(markupIn(Buffer.concat([PNG, Buffer.from('<html><script>alert(1)</script>')]))).toBe('html');
    expect(markupIn(Buffer.concat([PNG, Buffer.from('<img src=x onerror=alert(1)>')]))).toBe('html');
    expect(markupIn(Buffer.concat([PNG, Buffer.from('<img/src=x/onerror=alert(1)>')]))).toBe('html');
    expect(markupIn(Buffer.concat([PNG, Buffer.from('<a href="javascript:alert(1)">x</a>')]))).toBe('html');
    expect(markupIn(PNG)).toBeUndefined();
    expect(markupIn(PDF)).toBeUndefined();
    expect(markupIn(Buffer.from('a,b\n"<script>x</script>",2\n'))).toBeUndefined();
    expect(markupIn(Buffer.from('{"body": "<html>hi</html>"}'))).toBeUndefined();
    expect(markupIn(Buffer.from('<3 and <note> are words'))).toBeUndefined();
  });

  it('refuses markup bytes under any type or name but markup of their kind', () => {
    const svg = Buffer.from('<svg:svg xmlns:svg="http://www.w3.org/2000/svg" onload="x()"/>');
    expect(typeMismatch(svg, 'application/octet-stream', 'logo.svg')).toMatch(/SVG/);
    expect(typeMismatch(svg, 'image/svg+xml', 'logo.svg')).toBeUndefined();
    const xhtml = Buffer.from('<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"/>');
    expect(typeMismatch(xhtml, 'application/xml', 'page.xml')).toMatch(/HTML/);
    expect(typeMismatch(xhtml, 'application/xhtml+xml', 'page.xhtml')).toBeUndefined();
  });

  it('takes a markup name or type only when the block lists it and the file is declared and named as such', () => {
    for (const [type, name] of [
      ['application/xml', 'page.xml'],
      ['text/plain', 'page.html'],
      ['image/png', 'photo.html'],
      ['application/octet-stream', 'logo.svg'],
      ['text/plain', 'x.hta'],
    ])
      expect(markupRefusal(undefined, type, name)).toBeDefined();
    expect(markupRefusal(['image/*'], 'image/svg+xml', 'logo.svg')).toMatch(/does not take/);
    expect(markupRefusal(['image/svg+xml'], 'image/svg+xml', 'logo.svg')).toBeUndefined();
    expect(markupRefusal(['.svg'], 'image/svg+xml', 'logo.svg')).toBeUndefined();
    expect(markupRefusal(['text/html'], 'text/html', 'page.xml')).toMatch(/not named/);
    expect(markupRefusal(['.gpx'], 'application/gpx+xml', 'track.gpx')).toBeUndefined();
    expect(markupRefusal(undefined, 'application/pdf', 'cv.pdf')).toBeUndefined();
  });

  it('says what a file is in plain words', () => {
    expect(typeMismatch(EXE, 'application/pdf', 'fake_cv.pdf')).toBe(
      'is not a PDF: its contents are a Windows program (exe)',
    );
  });
});
