/**
 * Forms that compute on the respondent page (issue 46): recall filled into the texts a page
 * shows, and the page that ends the form (the ending its answers reach, or the thank-you texts).
 * Recall substitutes text into text: the page renders it escaped like any answer, so `<script>`
 * in an answer shows as text; a redirect takes each value URL-encoded.
 */
import { pageWords } from './words';
import { Logger } from '@nestjs/common';
import type { Block } from '../forms/blocks';
import { hasRecall, Outcome, recall, RecallValues, recallValues, redirectTarget } from '../forms/compute';
import { computeOutcome, computes } from '../forms/form-logic';
import type { FormRecord } from '../forms/forms.service';
import type { Page, Route } from './respondent.steps';

const logger = new Logger('Respondent');

/** Nothing answered yet: every recall renders empty. */
export const NO_RECALL: RecallValues = { block: () => '', hidden: () => '', variable: () => '' };

/**
 * Marks, in a text recalled for a page, where a block above on the same page is recalled: NUL,
 * the block's id, NUL. No recalled value can hold NUL (PostgreSQL's text and jsonb refuse it, so
 * no answer, hidden value or title does), so a mark is never made by what someone typed. The
 * page draws each as an empty span the page's script fills in as the person answers (see
 * respondent.page.tsx's recalled()); without the script it stays empty.
 */
export const SAME_PAGE_MARK = '\u0000';

/** `values`, with the blocks of `page` (by ref) recalled as SAME_PAGE_MARKs. */
export function withSamePage(values: RecallValues, blocks: Block[]): RecallValues {
  const onPage = new Map(blocks.filter((b) => b.ref).map((b) => [b.ref!, b.id]));
  if (!onPage.size) return values;
  return {
    ...values,
    block: (ref) => {
      const id = onPage.get(ref);
      return id ? `${SAME_PAGE_MARK}${id}${SAME_PAGE_MARK}` : values.block(ref);
    },
  };
}

/** A block with recall filled into its title, description and choice labels (the block itself when it recalls nothing). */
export function recallBlock(b: Block, values: RecallValues): Block {
  const choices = b.choices?.some((c) => hasRecall(c.label));
  if (!hasRecall(b.title) && !hasRecall(b.description) && !choices) return b;
  return {
    ...b,
    title: recall(b.title, values),
    ...(b.description ? { description: recall(b.description, values) } : {}),
    ...(choices ? { choices: b.choices!.map((c) => ({ ...c, label: recall(c.label, values) })) } : {}),
  };
}

/** What a page of the walk recalls: the answers on the pages before it, hidden values, and what those answers compute. */
export function valuesBefore(
  form: FormRecord,
  r: Route,
  page: Page,
): { values: RecallValues; variables?: Outcome['variables'] } {
  const at = r.onPath.indexOf(page);
  const earlier = new Set(r.onPath.slice(0, Math.max(0, at)).flatMap((p) => p.blocks.map((b) => b.id)));
  const answers = Object.fromEntries(Object.entries(r.stored).filter(([id]) => earlier.has(id)));
  const variables = computes(form) ? computeOutcome(form, answers, r.hidden).variables : undefined;
  return { values: recallValues(form.blocks, answers, r.hidden, variables ?? {}), variables };
}

/** The end of a form for these answers (stored, by block id): the ending reached, else the thank-you texts; recall filled in. */
export interface EndView {
  title: string;
  message: string;
  /** An ending's redirect, each recalled value URL-encoded, percent-encoded; only to the template's scheme and host. */
  redirectUrl?: string;
}

export function endView(
  form: FormRecord,
  answers: Record<string, unknown>,
  hidden: Record<string, string>,
  outcome: Pick<Outcome, 'variables' | 'ending'> | undefined = computes(form)
    ? computeOutcome(form, answers, hidden)
    : undefined,
): EndView {
  const values = recallValues(form.blocks, answers, hidden, outcome?.variables ?? {});
  const ending = form.compute?.endings?.find((e) => e.ref === outcome?.ending);
  if (ending) {
    const redirectUrl = ending.redirectUrl ? redirectTarget(ending.redirectUrl, values) : undefined;
    // A redirect whose values would leave its scheme and host (or make no URL): the ending's page instead.
    if (ending.redirectUrl && !redirectUrl)
      logger.debug(`Form ${form.publicId}: ending "${ending.ref}" redirect refused (not its scheme and host)`);
    return {
      title: recall(ending.title, values),
      message: recall(ending.message ?? '', values),
      ...(redirectUrl ? { redirectUrl } : {}),
    };
  }
  const thanks = form.compute?.thankYou;
  return {
    // The page's own words in the form's language (issue 51) when the form says none.
    title: recall(thanks?.title ?? pageWords(form.language).t('thankYou'), values),
    message: recall(thanks?.message ?? pageWords(form.language).t('received', { title: form.title }), values),
  };
}

/** The end of a form submitted in one page: from the response as stored (answers labelled, its variables and ending). */
export function endOfSubmitted(
  form: FormRecord,
  view: {
    answers: Record<string, unknown>;
    hidden?: Record<string, string>;
    variables?: Outcome['variables'];
    ending?: string | null;
  },
): EndView {
  const outcome = view.variables ? { variables: view.variables, ending: view.ending ?? null } : undefined;
  return endView(form, view.answers, view.hidden ?? {}, outcome);
}

/** The page script's logic with recall filled into the titles it announces. */
export function recallLogic<T extends { blocks: Array<{ title: string }> }>(logic: T, values: RecallValues): T {
  return {
    ...logic,
    blocks: logic.blocks.map((b) => (hasRecall(b.title) ? { ...b, title: recall(b.title, values) } : b)),
  };
}
