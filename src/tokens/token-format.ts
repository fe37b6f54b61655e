import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { randomBase62, toBase62 } from '../common/ids';

/**
 * Workspace API token format, as GitHub's: "fw_" + 30 random base62 characters (178 bits)
 * + 6 base62 characters of the CRC32 of those 30. The checksum lets a secret scanner
 * (and our own guard) reject a mistyped or made-up string without a database lookup.
 */
export const TOKEN_PREFIX = 'fw_';
const SECRET_LENGTH = 30;
const CHECKSUM_LENGTH = 6;
const TOKEN_PATTERN = /^fw_[0-9A-Za-z]{36}$/;

export function generateToken(): string {
  const secret = randomBase62(SECRET_LENGTH);
  return `${TOKEN_PREFIX}${secret}${checksum(secret)}`;
}

function checksum(secret: string): string {
  return toBase62(crc32(secret), CHECKSUM_LENGTH);
}

/** Shape and checksum only; says nothing about whether the token exists. */
export function isWellFormedToken(token: string): boolean {
  if (!TOKEN_PATTERN.test(token)) return false;
  const body = token.slice(TOKEN_PREFIX.length);
  return checksum(body.slice(0, SECRET_LENGTH)) === body.slice(SECRET_LENGTH);
}

/** What is stored: hex SHA-256 of the whole token. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** What a list shows to recognise a token: "fw_" and its first 4 secret characters. */
export function tokenDisplayPrefix(token: string): string {
  return token.slice(0, TOKEN_PREFIX.length + 4);
}
