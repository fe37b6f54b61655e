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
const HTML_TYPES = ['text/html', 'application/xhtml+xml'];
const SVG_TYPE = 'image/svg+xml';
const OCTET_STREAM = 'application/octet-stream';
/** Declared types whose files start with a signature magic-bytes knows: unknown bytes contradict them. */
const SIGNED_TYPES =
  /^(image|audio|video|font)\/|^application\/(pdf|zip|gzip|x-7z-compressed|x-rar-compressed|vnd\.rar)$/;

/** Markup a browser would run, by its opening text: 'html', 'svg', or undefined. */
function markupOf(bytes: Buffer): 'html' | 'svg' | undefined {
  const head = bytes
    .subarray(0, 1024)
    .toString('latin1')
    .replace(/^(\xef\xbb\xbf|\xfe\xff|\xff\xfe)/, '')
    .replace(/\0/g, '')
    .trimStart()
    .toLowerCase();
  if (/^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*(<!doctype svg|<svg[\s>])/.test(head)) return 'svg';
  if (/^(<!--[\s\S]*?-->\s*)*(<!doctype html|<html|<head|<body|<script|<iframe|<\?xml[^>]*>\s*<html)/.test(head))
    return 'html';
  return undefined;
}

/**
 * Whether the first bytes of a file agree with its declared type (and, for markup, its name):
 * undefined when they do, else what was found, for the error. Markup (HTML, SVG) must be declared
 * as such and named so; a known binary type (magic bytes) must be the declared type, unless that is
 * application/octet-stream (which claims nothing); bytes of no known type are refused only for a
 * declared type that has a signature (images, audio, video, PDF, archives) or, when not text, for a
 * declared text type (csv, plain, json, ...): a .dwg or a vendor format has no signature to check.
 */
export function typeMismatch(bytes: Buffer, contentType: string, filename: string): string | undefined {
  const markup = markupOf(bytes);
  if (markup) {
    const ext = extensionOf(filename);
    const declaredOk = markup === 'svg' ? contentType === SVG_TYPE : HTML_TYPES.includes(contentType);
    const nameOk = markup === 'svg' ? ext === '.svg' : ['.html', '.htm', '.xhtml'].includes(ext);
    return declaredOk && nameOk
      ? undefined
      : `the file is ${markup === 'svg' ? 'SVG' : 'HTML'} markup, declared as ${contentType} and named "${filename}"`;
  }
  if (contentType === OCTET_STREAM) return undefined;
  const found = filetypeinfo(bytes);
  if (found.length) {
    const mimes = found.flatMap((f) => (f.mime ? [ALIASES[f.mime] ?? f.mime] : []));
    if (mimes.includes(contentType)) return undefined;
    const what = found[0].mime ? `${found[0].typename} (${found[0].mime})` : `${found[0].typename}`;
    return `the file's bytes are ${what}, not ${contentType}`;
  }
  if (TEXT_TYPES.test(contentType))
    return bytes.includes(0) ? `the file's bytes are not text, so not ${contentType}` : undefined;
  return SIGNED_TYPES.test(contentType) ? `the file's first bytes are not those of ${contentType}` : undefined;
}
