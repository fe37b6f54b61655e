/**
 * The respondent page's side of invitations (issue 47): the link's secret, and what the page says
 * when an invite takes no answer. The rules are InvitesService's (src/access).
 */
import { ApiError } from '../common/errors/api-error';
import { messagePage } from './respondent.page';

/** The ?invite= of a page's URL, as sent (undefined: none). */
export function inviteOfQuery(query: unknown): unknown {
  const raw = query && typeof query === 'object' ? (query as Record<string, unknown>).invite : undefined;
  return Array.isArray(raw) ? raw[0] : raw;
}

/** Whether a refusal is an invitation's. */
export const isInviteRefusal = (err: unknown): err is ApiError =>
  err instanceof ApiError && err.code.startsWith('invite_');

const WORDS: Record<string, [string, string]> = {
  invite_required: ['This form is by invitation only', 'Open it from the link in the invitation you were sent.'],
  invite_invalid: [
    'This invitation link does not work',
    'It is not a valid invitation to this form. Check that you opened the whole link you were sent.',
  ],
  invite_expired: ['This invitation has expired', 'Ask whoever invited you for a new link.'],
  invite_revoked: ['This invitation was withdrawn', 'Ask whoever invited you for a new link.'],
  invite_used: ['Already answered', 'This invitation has already been answered: it takes one response. Thank you.'],
};

/** The page of an invitation's refusal, in the person's words. */
export function invitePage(err: ApiError): string {
  const [title, text] = WORDS[err.code] ?? WORDS.invite_invalid;
  return messagePage(title, err.code === 'invite_expired' ? `${err.message} ${text}` : text);
}
