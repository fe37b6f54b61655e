import type { Block } from '../forms/blocks';

/** A page's step of the drop-off funnel (issue 36). */
export interface FunnelStep {
  /** '' for the first page, else its page_break's id. */
  page: string;
  /** The page_break's title, when it has one. */
  title?: string;
  /** Responses (completed or partial) that reached the page. */
  reached: number;
  /** Of those, how many completed. */
  completed: number;
}

/** The page keys of a form in order: '' for the blocks before the first page_break, then each page_break's id. */
export function pageKeys(blocks: Block[]): string[] {
  const keys = blocks[0]?.type === 'page_break' ? [] : [''];
  for (const b of blocks) if (b.type === 'page_break') keys.push(b.id);
  return keys.length ? keys : [''];
}
