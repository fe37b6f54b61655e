/**
 * The form setting `receipt` (issue 48, item 4): after completion, the respondent's answers are
 * mailed to the address its email block (`to`, by ref) holds. Subject and message take recall
 * ({{ref}}, {{hidden:x}}, {{variable:x}}); the subject is one line when sent (no header injection).
 */
import type { ErrorDetail } from '../common/errors/api-error';
import type { Block } from './blocks';
import type { ReceiptSetting } from './entities/form.entity';

export const RECEIPT_SUBJECT_MAX = 150;
export const RECEIPT_MESSAGE_MAX = 2000;

/** Why a receipt setting is refused, at its paths; [] when it is good for these blocks. */
export function checkReceipt(receipt: ReceiptSetting | null | undefined, blocks: Block[]): ErrorDetail[] {
  if (receipt === null || receipt === undefined) return [];
  // The tool list carries no schema of it (one line): its shape is checked here.
  if (typeof receipt !== 'object' || Array.isArray(receipt))
    return [{ path: '/receipt', message: 'must be an object { to, subject?, message? } or null' }];
  const extra = Object.keys(receipt).filter((k) => !['to', 'subject', 'message'].includes(k));
  if (extra.length)
    return [{ path: `/receipt/${extra[0]}`, message: 'is not a field of receipt (to, subject, message)' }];
  const strings = (['to', 'subject', 'message'] as const).filter(
    (k) => (k === 'to' || receipt[k] !== undefined) && typeof receipt[k] !== 'string',
  );
  if (strings.length) return strings.map((k) => ({ path: `/receipt/${k}`, message: 'must be a string' }));
  const details: ErrorDetail[] = [];
  const to = blocks.find((b) => b.ref === receipt.to);
  if (!to)
    details.push({ path: '/receipt/to', message: `names no block: give the ref of an email block ("${receipt.to}")` });
  else if (to.type !== 'email')
    details.push({ path: '/receipt/to', message: `names a ${to.type} block: give the ref of an email block` });
  if (receipt.subject !== undefined && receipt.subject.length > RECEIPT_SUBJECT_MAX)
    details.push({ path: '/receipt/subject', message: `is longer than ${RECEIPT_SUBJECT_MAX} characters` });
  if (receipt.message !== undefined && receipt.message.length > RECEIPT_MESSAGE_MAX)
    details.push({ path: '/receipt/message', message: `is longer than ${RECEIPT_MESSAGE_MAX} characters` });
  return details;
}

/** The setting as stored: only its fields, the empty ones left out. */
export function storedReceipt(receipt: ReceiptSetting | null | undefined): ReceiptSetting | null {
  if (!receipt) return null;
  return {
    to: receipt.to,
    ...(receipt.subject ? { subject: receipt.subject } : {}),
    ...(receipt.message ? { message: receipt.message } : {}),
  };
}
