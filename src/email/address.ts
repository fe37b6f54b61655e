/**
 * Addresses Formwork mails a respondent at (issue 48): checked before anything is queued. One
 * address, no display name, nothing a header could take apart (no spaces, control characters,
 * commas, angle brackets, quotes); lower-cased, so a recipient's limit counts every spelling of it.
 * The same pattern guards receipts in SQL (migration 1796000670000).
 */
const ADDRESS = /^[a-z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;

/** The address to send to, or null when `value` is not one address. */
export function recipientAddress(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const address = value.trim().toLowerCase();
  if (address.length > 254 || address.indexOf('@') > 64) return null;
  return ADDRESS.test(address) ? address : null;
}

/**
 * What one recipient, one client (IP) and one form may be sent in an hour of messages asked for on
 * a form's page (receipts count toward the recipient's three).
 */
export const RESPONDENT_LIMITS = { perAddress: 3, perClient: 10, perForm: 200 } as const;
