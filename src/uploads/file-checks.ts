/**
 * The checks of a file that need no storage or database: its name as shown, its declared type,
 * whether a block accepts it, and whether its first bytes agree with the declared type.
 */
import { filetypeinfo } from 'magic-bytes.js';

/** Longest cleaned filename, in UTF-16 code units (the extension is kept). */
export const MAX_FILENAME = 255;
/** How many first bytes the type check reads. */
export const SNIFF_BYTES = 4100;

/**
 * A filename safe to show and to put in a header: the last path segment, no control, format or
 * bidi characters (U+202E would show "gnp.exe" as "exe.png"), whitespace folded, at most 255
 * characters keeping the extension. Empty when nothing is left (the caller says what to send).
 */
export function cleanFilename(raw: string): string {
  const last = raw.split(/[/\\]/).pop() ?? '';
  let name = last
    .normalize('NFC')
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u{FFFD}]/gu, '')
    .replace(/\s+/gu, ' ')
    .trim()
    .replace(/^\.+/, '');
  if (name.length > MAX_FILENAME) {
    const dot = name.lastIndexOf('.');
    const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
    name = cutAt(name.slice(0, dot > 0 && ext ? dot : name.length), MAX_FILENAME - ext.length).trimEnd() + ext;
  }
  return name;
}

/** The first `n` code units, not splitting a surrogate pair. */
function cutAt(s: string, n: number): string {
  const code = s.charCodeAt(n - 1);
  return s.slice(0, code >= 0xd800 && code <= 0xdbff ? n - 1 : n);
}

export function extensionOf(filename: string): string {
  const dot = filename.lastIndexOf('.');
  return dot > 0 ? filename.slice(dot).toLowerCase() : '';
}

const MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;
/** Names browsers and systems use for the same types. */
const ALIASES: Record<string, string> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'image/x-png': 'image/png',
  'application/x-zip-compressed': 'application/zip',
  'audio/mp3': 'audio/mpeg',
  'application/x-pdf': 'application/pdf',
};

/** A declared type as stored: lowercase, parameters dropped, aliases folded; undefined when not a MIME type. */
export function normalizeContentType(raw: string): string | undefined {
  const type = raw.split(';')[0].trim().toLowerCase();
  if (!MIME.test(type)) return undefined;
  return ALIASES[type] ?? type;
}

/** Whether a block's accept list takes a file of this type and name (no list: anything). */
export function accepts(accept: string[] | undefined, contentType: string, filename: string): boolean {
  if (!accept?.length) return true;
  const ext = extensionOf(filename);
  return accept.some((a) =>
    a.startsWith('.')
      ? a === ext
      : a.endsWith('/*')
        ? contentType.startsWith(a.slice(0, -1))
        : (ALIASES[a] ?? a) === contentType,
  );
}

const TEXT_TYPES = /^(text\/(?!html$)[a-z0-9.+-]+|application\/(json|xml|csv|[a-z0-9.-]+\+(json|xml)))$/;
const OCTET_STREAM = 'application/octet-stream';
/** Declared types whose files start with a signature magic-bytes knows: unknown bytes contradict them. */
const SIGNED_TYPES =
  /^(image|audio|video|font)\/|^application\/(pdf|zip|gzip|x-7z-compressed|x-rar-compressed|vnd\.rar)$/;

/** Markup a browser runs or renders: an HTML (or XHTML) page, an SVG image, another XML document. */
export type MarkupKind = 'html' | 'svg' | 'xml';

/** The markup kind of a declared type (any other `+xml` type is XML). */
function markupType(contentType: string): MarkupKind | undefined {
  if (contentType === 'text/html' || contentType === 'application/xhtml+xml') return 'html';
  if (contentType === 'image/svg+xml') return 'svg';
  if (/^(application|text)\/(xml|xsl|[a-z0-9.-]+\+xml)$/.test(contentType)) return 'xml';
  return undefined;
}

/**
 * Extensions a browser (or the system) opens as markup, whatever the declared type. `never`: no
 * declared type makes them safe to take (server-side includes, web archives, HTML applications, XSLT).
 */
const MARKUP_NAMES: Record<string, MarkupKind | 'never'> = {
  '.html': 'html',
  '.htm': 'html',
  '.xhtml': 'html',
  '.xht': 'html',
  '.svg': 'svg',
  '.xml': 'xml',
  '.shtml': 'never',
  '.shtm': 'never',
  '.mht': 'never',
  '.mhtml': 'never',
  '.hta': 'never',
  '.svgz': 'never',
  '.xsl': 'never',
  '.xslt': 'never',
};

/** Whether a name fits markup of this kind: its extension is the kind's (XML: .xml, or no markup extension at all). */
function nameFits(kind: MarkupKind, filename: string): boolean {
  const named = MARKUP_NAMES[extensionOf(filename)];
  return named === kind || (kind === 'xml' && named === undefined);
}

/** A root element a browser sniffing the file takes for HTML (WHATWG MIME Sniffing's list, and a few more). */
const HTML_TAG =
  /^(html|head|body|script|iframe|frameset|frame|object|embed|div|span|a|b|i|p|br|h[1-6]|table|font|title|style|img|meta|link|base|form|input|button|math|template|video|audio|details)$/;
/** A root element with a namespace declaration. */
const XMLNS = /^<[^>]*\sxmlns[:=]/;
/** What a file starts with, past a byte-order mark, spaces, comments, processing instructions and a doctype. */
const PROLOG = /^(?:\s+|<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<!doctype[^>]*>)*/;
/** Anywhere in the first bytes (a polyglot hides markup after an image's or a PDF's signature). */
const ANYWHERE_SVG = /<(?:[a-z][\w.-]*:)?svg[\s/>]|https?:\/\/www\.w3\.org\/2000\/svg/;
const ANYWHERE_HTML = new RegExp(
  [
    '<(?:[a-z][\\w.-]*:)?(?:script|html|body|iframe|frameset|object|embed)[\\s/>]',
    '<!doctype\\s+html',
    'https?://www\\.w3\\.org/1999/xhtml',
    '<\\?xml-stylesheet',
    // An event handler in a tag, after a space or a slash: <img src=x onerror=...>, <img/src=x/onerror=...>
    '<[a-z][\\w:.-]*[\\s/][^<>]*?\\bon[a-z]{3,}\\s*=',
    'javascript:',
  ].join('|'),
);

/**
 * The markup in a file's first bytes, if any: read as text (UTF-16 folded to ASCII, case folded).
 * It is markup when it opens with a tag (HTML's tags, or any element once prefixed, namespaced or
 * after an XML declaration or doctype: `<svg:svg>`, `<x:html xmlns:x=...>`), as a browser sniffing
 * it would see; or, in a binary file, when script-capable markup shows anywhere in those bytes (a
 * script, an event handler, an HTML or SVG root or namespace), as in a PNG/HTML polyglot. The kind: SVG for an SVG
 * root or namespace (unless XHTML's also shows), HTML for HTML's tags or namespace, else XML.
 */
export function markupIn(bytes: Buffer): MarkupKind | undefined {
  const head = bytes.subarray(0, SNIFF_BYTES).toString('latin1');
  const text = head
    .replace(/^(\xef\xbb\xbf|\xfe\xff|\xff\xfe)/, '')
    .replace(/\0/g, '')
    .toLowerCase();
  const prolog = PROLOG.exec(text)![0];
  const declared = /<\?xml|<!doctype/.test(prolog);
  const root = /^<([a-z_][\w.-]*:)?([a-z_][\w.-]*)/.exec(text.slice(prolog.length));
  const local = root?.[2];
  const htmlTag = local !== undefined && HTML_TAG.test(local);
  const opens = root ? !!root[1] || declared || htmlTag || XMLNS.test(text.slice(prolog.length)) : declared;
  const svg = ANYWHERE_SVG.test(text);
  const html = ANYWHERE_HTML.test(text);
  // Markup further in counts in binary files only: a text file (CSV, JSON, notes) may quote HTML,
  // and is opened as text (its name is not markup's: markupRefusal).
  const binary =
    bytes.subarray(0, SNIFF_BYTES).some((b) => b < 9 || (b > 13 && b < 32 && b !== 27)) ||
    filetypeinfo(bytes).some((f) => !f.mime || !(TEXT_TYPES.test(f.mime) || markupType(f.mime)));
  if (!opens && !(binary && (svg || html))) return undefined;
  if (text.includes('www.w3.org/1999/xhtml') || /<!doctype\s+html/.test(prolog)) return 'html';
  if (local === 'svg' || /<!doctype\s+svg/.test(prolog)) return 'svg';
  if (htmlTag) return 'html';
  return svg ? 'svg' : html ? 'html' : 'xml';
}

const KIND_WORDS: Record<MarkupKind, string> = {
  html: 'a web page (HTML)',
  svg: 'an SVG image with markup',
  xml: 'an XML document',
};

/**
 * Whether a file's declared type and name may be taken by a block as far as markup goes: undefined
 * when neither is markup, or when both are of one kind and the block's accept list names the type
 * or the extension itself (a wildcard such as `image/*`, or no list, takes no markup). Else the
 * problem, worded to follow the file's name. A name with a markup extension is markup whatever its
 * declared type; application/octet-stream claims nothing, so it is never markup's declared type.
 */
export function markupRefusal(accept: string[] | undefined, contentType: string, filename: string): string | undefined {
  const byType = markupType(contentType);
  const ext = extensionOf(filename);
  const byName = MARKUP_NAMES[ext];
  if (!byType && !byName) return undefined;
  if (!byType)
    return `is named ${ext}, which a browser opens as markup, but declared ${contentType}: markup is taken only from a file declared and named as such`;
  if (!nameFits(byType, filename)) return `is declared as ${KIND_WORDS[byType]} (${contentType}) but not named as one`;
  const kind = byType;
  const listed = accept?.some((a) => a === ext || (ALIASES[a] ?? a) === contentType);
  return listed ? undefined : `is ${KIND_WORDS[kind]}, which this question does not take`;
}

/** Plain words for a type: "a PDF", "a PNG image", "a Windows program". */
const TYPE_WORDS: Record<string, string> = {
  'application/pdf': 'a PDF',
  'image/png': 'a PNG image',
  'image/jpeg': 'a JPEG image',
  'image/gif': 'a GIF image',
  'image/webp': 'a WebP image',
  'image/heic': 'a HEIC image',
  'image/svg+xml': 'an SVG image',
  'application/zip': 'a ZIP archive',
  'application/gzip': 'a gzip archive',
  'application/msword': 'a Word document',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'a Word document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'an Excel spreadsheet',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'a PowerPoint presentation',
  'application/x-msdownload': 'a Windows program',
  'application/x-executable': 'a program',
  'text/plain': 'a text file',
  'text/csv': 'a CSV file',
  'application/json': 'a JSON file',
  'text/html': 'a web page (HTML)',
  'video/mp4': 'an MP4 video',
  'audio/mpeg': 'an MP3 file',
};
const TYPENAME_WORDS: Record<string, string> = {
  exe: 'a Windows program',
  elf: 'a Linux program',
  'mach-o': 'a Mac program',
};

/** A type in plain words, for messages a person reads. */
export function typeWords(contentType: string): string {
  const words = TYPE_WORDS[contentType];
  if (words) return words;
  const top = contentType.split('/')[0];
  const family = { image: 'an image', video: 'a video', audio: 'a sound file', font: 'a font', text: 'a text file' }[
    top
  ];
  return family ? `${family} (${contentType})` : `a file of type ${contentType}`;
}

/**
 * Whether the first bytes of a file agree with its declared type (and, for markup, its name):
 * undefined when they do, else the problem, worded to follow the file's name ("is not a PDF: its
 * contents are a Windows program (exe)"). Markup (markupIn) must be declared and named as markup
 * of its kind (HTML bytes under an HTML type; SVG under SVG or HTML; XML under any markup type);
 * whether the block takes markup at all is markupRefusal's, on the declared type and name. A known
 * binary type (magic bytes) must be the declared type, unless that is application/octet-stream
 * (which claims nothing); bytes of no known type are refused only for a declared type that has a
 * signature (images, audio, video, PDF, archives) or, when not text, for a declared text type (csv,
 * plain, json, ...): a .dwg or a vendor format has no signature to check.
 */
export function typeMismatch(bytes: Buffer, contentType: string, filename: string): string | undefined {
  const markup = markupIn(bytes);
  const declared = markupType(contentType);
  if (markup) {
    const fits =
      declared !== undefined &&
      (markup === declared || declared === 'html' || markup === 'xml') &&
      nameFits(declared, filename);
    return fits
      ? undefined
      : `contains ${KIND_WORDS[markup]}, which is taken only from a file declared and named as such`;
  }
  if (contentType === OCTET_STREAM) return undefined;
  const found = filetypeinfo(bytes);
  if (found.length) {
    const mimes = found.flatMap((f) => (f.mime ? [ALIASES[f.mime] ?? f.mime] : []));
    if (mimes.includes(contentType)) return undefined;
    const first = found[0];
    const words = (first.mime && TYPE_WORDS[first.mime]) ?? TYPENAME_WORDS[first.typename.toLowerCase()];
    const what = words
      ? `${words} (${first.typename})`
      : first.mime
        ? `${first.typename} (${first.mime})`
        : first.typename;
    return `is not ${typeWords(contentType)}: its contents are ${what}`;
  }
  if (TEXT_TYPES.test(contentType))
    return bytes.includes(0) ? `is not ${typeWords(contentType)}: its contents are not text` : undefined;
  return SIGNED_TYPES.test(contentType)
    ? `is not ${typeWords(contentType)}: its first bytes are not those of ${contentType}`
    : undefined;
}
