/**
 * What the respondent page says about files (issue 45, item 2): the types a question takes in
 * words ("PDF files", "images"), and why a file was refused, naming the file and saying what to do.
 * Never an upload id or a MIME type: those are the tools' words.
 */
import type { Block } from '../forms/blocks';

/** Formats, read as "<name> files" ("PDF or .docx files"). */
const FORMATS: Record<string, string> = {
  'application/pdf': 'PDF',
  'application/x-pdf': 'PDF',
  'image/png': 'PNG',
  'image/jpeg': 'JPEG',
  'image/jpg': 'JPEG',
  'image/gif': 'GIF',
  'image/webp': 'WebP',
  'image/heic': 'HEIC',
  'image/svg+xml': 'SVG',
  'image/tiff': 'TIFF',
  'text/plain': 'text',
  'text/csv': 'CSV',
  'text/markdown': 'Markdown',
  'application/json': 'JSON',
  'application/xml': 'XML',
  'application/zip': 'ZIP',
  'application/rtf': 'RTF',
  'application/msword': 'Word',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'Word',
  'application/vnd.ms-excel': 'Excel',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'Excel',
  'application/vnd.ms-powerpoint': 'PowerPoint',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'PowerPoint',
  'application/vnd.oasis.opendocument.text': 'OpenDocument text',
  'application/vnd.oasis.opendocument.spreadsheet': 'OpenDocument spreadsheet',
  'audio/mpeg': 'MP3',
  'video/mp4': 'MP4',
};

/** Kinds, read as they are ("PDF files or images"). */
const KINDS: Record<string, string> = {
  'image/*': 'images',
  'video/*': 'videos',
  'audio/*': 'audio files',
  'text/*': 'text files',
  'font/*': 'fonts',
};

/** One accepted type's word: a kind ("images"), or a format's name ("PDF", ".docx"). */
function wordOf(type: string): { kind?: string; format?: string } {
  const t = type.trim().toLowerCase();
  if (KINDS[t]) return { kind: KINDS[t] };
  if (t.startsWith('.')) return { format: t };
  if (FORMATS[t]) return { format: FORMATS[t] };
  if (t.endsWith('/*')) return { kind: `${t.slice(0, -2)} files` };
  // Another MIME type: its subtype, as an extension would say it ("application/x-dwg" → "DWG").
  const sub = (t.split('/')[1] ?? t).replace(/^(x-|vnd\.|prs\.)/, '').split('+')[0];
  const last = sub.split('.').pop() || sub;
  return { format: /^[a-z0-9]{1,5}$/.test(last) ? last.toUpperCase() : last };
}

/** "a", "a or b", "a, b or c". */
function orList(words: string[]): string {
  return words.length < 2 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`;
}

/** A block's accept list in words: "PDF files", "images", "PDF or .docx files", "PDF files or images". */
export function typesInWords(accept: string[]): string {
  const formats: string[] = [];
  const kinds: string[] = [];
  for (const a of accept) {
    const { kind, format } = wordOf(a);
    if (kind && !kinds.includes(kind)) kinds.push(kind);
    if (format && !formats.includes(format)) formats.push(format);
  }
  return orList([...(formats.length ? [`${orList(formats)} files`] : []), ...kinds]);
}

/** "The file “cv.pdf”" (a long name cut), or "A file you chose" when its name is not known any more. */
function theFile(filename: string | undefined): string {
  if (!filename) return 'A file you chose';
  return `The file “${filename.length > 80 ? `${filename.slice(0, 77)}…` : filename}”`;
}

const takes = (block: Block) => (block.accept?.length ? ` This question takes ${typesInWords(block.accept)}.` : '');

/** Why the page could not take a file, in the person's words. */
export type FileRefusal = 'type' | 'contents' | 'size' | 'arrival' | 'gone' | 'other';

/**
 * The page's sentence for a refused file: what happened to it, named, and what to do.
 * `limitMb` is the question's limit on the form's plan (for 'size').
 */
export function fileRefusedWords(
  block: Block,
  filename: string | undefined,
  why: FileRefusal,
  limitMb?: number,
): string {
  const name = theFile(filename);
  switch (why) {
    case 'type':
      return block.accept?.length
        ? `${name} cannot be used here: this question takes ${typesInWords(block.accept)}. Choose another file.`
        : `${name} could not be taken. Rename it or choose another file.`;
    case 'contents':
      return `${name} is not what its name says: its contents are of another type, so it was not kept.${takes(block)} Choose another file.`;
    case 'size':
      return `${name} is too large: this question takes files of at most ${limitMb ?? block.maxSizeMb ?? 10} MB. Choose a smaller file.`;
    case 'arrival':
      return `${name} did not arrive whole. Choose it again.`;
    case 'gone':
      return `${name} is no longer available (files not sent within a day are removed). Choose it again.`;
    default:
      return `${name} could not be taken. Rename it or choose another file.`;
  }
}

/**
 * What a refusal of the uploads service says about a file (its detail's message, after the
 * upload id), as one of the page's kinds. Anything not recognised is taken as a type the bytes
 * contradict, the only refusal left once the file is this form's and arrived whole.
 */
export function refusalKind(message: string): FileRefusal {
  if (/not an upload of this form|no such upload|does not exist|already held|another block|deleted/i.test(message))
    return 'gone';
  if (/no bytes stored|were declared|did not arrive|not whole/i.test(message)) return 'arrival';
  if (/limit|larger than|too large|at most \d/i.test(message)) return 'size';
  if (/is not a type this block takes|not accepted|accept/i.test(message)) return 'type';
  return 'contents';
}
