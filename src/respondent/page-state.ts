import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { DataSource } from 'typeorm';
import { sharedSecret } from '../oauth/shared-secret';
import type { RawAnswers } from './respondent.page';

/**
 * Where a person is in a form of several pages, and what they answered so far.
 *
 * Why the state travels signed in the page (a hidden field) rather than as a stored draft: the
 * page then works on any instance with nothing written per visitor (no draft rows for the many who
 * open a form and leave, nothing to purge, nothing to look up on each step); Back, Next and a
 * refresh (which re-sends the last post) all carry the whole state; and the person's answers are
 * theirs to see anyway. It is signed (HMAC-SHA256, a key every instance shares, kept in
 * oauth_secrets like the service's other shared keys) so that only states this service issued,
 * for this form, are taken: the final answers are validated again in full on submission whatever
 * the state says, so the signature protects the walk (pages, nonce, issue time), not the rules.
 */
export interface PageState {
  /** The form's internal id: a state is only good for the form that issued it. */
  f: string;
  /** The submission's nonce: the final post stores one response per nonce (a double click, a replay). */
  n: string;
  /** When this state was issued (ms): a final post older than STATE_MAX_AGE_MS is shown again to be re-sent. */
  t: number;
  /** The answers so far, as the form posts carried them, by block id. */
  a: RawAnswers;
  /** The hidden values, from the first page's URL query (declared names only). */
  h: Record<string, string>;
  /** The pages visited, first to current: '' for the page before the first page_break, else that page_break's id. */
  s: string[];
  /** The blocks of the current page shown when it was drawn (so Next can tell when answers show new ones). */
  r: string[];
  /**
   * With the form's partialResponses on, the resume secret of the partial this walk saves to
   * (also in the page's cookie): the walk keeps one partial where cookies are refused too.
   */
  p?: string;
  /** That partial's id: the files it holds are this walk's files too (shown with Keep boxes). */
  i?: string;
  /** The invitation this walk answers (issue 47): its id (the secret stays in the link). */
  v?: string;
  /** When the walk's first page was drawn (ms): the spam gate's minimum time to fill (issue 47). */
  o?: number;
  /** A spam reason a page post of this walk gave (the honeypot filled): its submission is kept as spam. */
  z?: string;
  /** The pages ask for the spam check's challenge (once asked, every later page of the walk does). */
  c?: 1;
}

/**
 * The nonce is kept (settings_once) for 24 hours; a final post with an older state is not stored
 * but shown again with a fresh state, so a replay after the nonce is forgotten stores nothing.
 */
export const STATE_MAX_AGE_MS = 23 * 60 * 60 * 1000;

@Injectable()
export class PageStateSigner {
  private key?: Buffer;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async sign(state: PageState): Promise<string> {
    const body = Buffer.from(JSON.stringify(state)).toString('base64url');
    return `${body}.${this.mac(await this.secret(), body)}`;
  }

  /** The state a page carried, or undefined when it is not one this service signed for this form. */
  async verify(token: unknown, formId: string): Promise<PageState | undefined> {
    if (typeof token !== 'string') return undefined;
    const [body, mac, extra] = token.split('.');
    if (!body || !mac || extra !== undefined) return undefined;
    const expected = Buffer.from(this.mac(await this.secret(), body));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    try {
      const state = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as PageState;
      return state.f === formId && Array.isArray(state.s) && state.s.length > 0 ? state : undefined;
    } catch {
      return undefined;
    }
  }

  private mac(key: Buffer, body: string): string {
    return createHmac('sha256', key).update(body).digest('base64url');
  }

  private async secret(): Promise<Buffer> {
    this.key ??= Buffer.from(
      await sharedSecret(this.db, 'respondent-state-key', () => randomBytes(32).toString('base64url')),
      'base64url',
    );
    return this.key;
  }
}
