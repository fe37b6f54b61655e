/**
 * The notices shown after a change: the redirect that answers a form post carries one of these
 * keys (`?done=role-changed`), and the page shows the fixed text of the key. No free text travels
 * in the URL, so a crafted link can only show one of these sentences; an unknown key shows nothing.
 */
export const NOTICES = {
  'token-revoked': 'Token revoked. Scripts using it stop working within 5 seconds.',
  'role-changed': 'Role changed.',
  'member-removed': 'Member removed. The tokens they created stop working within 5 seconds.',
  'app-disconnected': 'App disconnected. Its tokens stop working within 5 seconds.',
  'webhook-deleted': 'Endpoint deleted.',
  'email-saved': 'Your email notifications are saved.',
  'email-test': 'A test message is queued to your address.',
  'email-retry': 'The message is queued again.',
  'webhook-enabled': 'Endpoint enabled.',
  'webhook-disabled': 'Endpoint disabled. Nothing is sent to it until it is enabled again.',
  'test-sent': 'Test event queued: it appears in the deliveries below.',
  redelivered: 'Delivery queued again.',
  'plan-changed': 'Plan changed.',
  'origins-saved': 'Embedding origins saved.',
  'form-published': 'Form published: it takes responses.',
  'form-closed': 'Form closed: it takes no more responses. Its responses stay.',
  'form-deleted': 'Form deleted, with all its responses.',
  'form-settings-saved': 'Settings saved.',
  'response-deleted': 'Response deleted.',
  'password-chosen': 'Your password is set: the printed one no longer works. Other browsers were signed out.',
} as const;

export type NoticeKey = keyof typeof NOTICES;

/** The text of `?done=`, when it names a notice. */
export function noticeOf(done: unknown): string | undefined {
  return typeof done === 'string' && Object.hasOwn(NOTICES, done) ? NOTICES[done as NoticeKey] : undefined;
}

/** A settings path with its notice. */
export const withNotice = (path: string, notice?: NoticeKey) =>
  notice ? `${path}${path.includes('?') ? '&' : '?'}done=${notice}` : path;
