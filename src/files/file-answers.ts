/** File answers as reads show them (issue 35): upload ids replaced by the files' names, sizes, types (and links). */
import { type Block, isFileBlock } from '../forms/blocks';
import type { UploadDescription } from '../uploads/uploads.service';

export interface FileAnswer extends UploadDescription {
  /** A download link (tools and exports); webhook payloads have none. */
  url?: string;
}

/** The keys file answers (file_upload) have in answers keyed by block id or (byRef) by ref where the block has one. */
export function fileKeys(blocks: Block[], byRef = false): string[] {
  return blocks.filter(isFileBlock).map((b) => (byRef && b.ref ? b.ref : b.id));
}

/** Every upload id these answers name under `keys`. */
export function namedUploads(answers: Array<Record<string, unknown>>, keys: string[]): string[] {
  return answers.flatMap((a) => keys.flatMap((k) => (Array.isArray(a[k]) ? (a[k] as string[]) : [])));
}

/** The answers with each file answer as `[{ uploadId, name, size, contentType, url? }]` (uploads not found left out). */
export function showFiles(
  answers: Record<string, unknown>,
  keys: string[],
  described: Map<string, UploadDescription>,
  link?: (uploadId: string) => string,
): Record<string, unknown> {
  const out = { ...answers };
  for (const key of keys) {
    const ids = answers[key];
    if (!Array.isArray(ids)) continue;
    out[key] = ids.flatMap((id: string): FileAnswer[] => {
      const file = described.get(id);
      return file ? [link ? { ...file, url: link(id) } : file] : [];
    });
  }
  return out;
}
