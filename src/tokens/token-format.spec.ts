import { generateToken, hashToken, isWellFormedToken, TOKEN_PREFIX, tokenDisplayPrefix } from './token-format';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The token with the character at `index` replaced by a different base62 character. */
function withCharChanged(token: string, index: number, step = 1): string {
  const next = BASE62[(BASE62.indexOf(token[index]) + step) % BASE62.length];
  return token.slice(0, index) + next + token.slice(index + 1);
}

describe('generateToken', () => {
  it('is "fw_" followed by 36 base62 characters', () => {
    const token = generateToken();
    expect(TOKEN_PREFIX).toBe('fw_');
    expect(token).toMatch(/^fw_[0-9A-Za-z]{36}$/);
  });

  it('gives a different token every time', () => {
    const tokens = new Set(Array.from({ length: 200 }, () => generateToken()));
    expect(tokens.size).toBe(200);
  });
});

describe('isWellFormedToken', () => {
  it('accepts every generated token', () => {
    for (let i = 0; i < 200; i++) expect(isWellFormedToken(generateToken())).toBe(true);
  });

  it('rejects a token with any single character of its secret or checksum changed', () => {
    const token = generateToken();
    for (let i = TOKEN_PREFIX.length; i < token.length; i++) {
      for (const step of [1, 31]) {
        expect({ i, step, ok: isWellFormedToken(withCharChanged(token, i, step)) }).toEqual({ i, step, ok: false });
      }
    }
  });

  it('rejects a made-up token of the right shape', () => {
    expect(isWellFormedToken('fw_' + 'a'.repeat(36))).toBe(false);
  });

  it('rejects a wrong prefix', () => {
    const body = generateToken().slice(TOKEN_PREFIX.length);
    expect(isWellFormedToken('gh_' + body)).toBe(false);
    expect(isWellFormedToken('FW_' + body)).toBe(false);
    expect(isWellFormedToken(body)).toBe(false);
  });

  it('rejects a token one character too short or too long', () => {
    const token = generateToken();
    expect(isWellFormedToken(token.slice(0, -1))).toBe(false);
    expect(isWellFormedToken(token + 'a')).toBe(false);
    expect(isWellFormedToken(token.slice(0, 4) + token.slice(5))).toBe(false);
  });

  it('rejects surrounding whitespace and non-base62 characters', () => {
    const token = generateToken();
    expect(isWellFormedToken(` ${token}`)).toBe(false);
    expect(isWellFormedToken(`${token}\n`)).toBe(false);
    expect(isWellFormedToken(token.slice(0, 10) + '-' + token.slice(11))).toBe(false);
    expect(isWellFormedToken('')).toBe(false);
  });
});

describe('hashToken', () => {
  it('is the hex SHA-256 of the whole token', () => {
    // Known vector: SHA-256("abc").
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const token = generateToken();
    expect(hashToken(token)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('never equals the token and is stable for the same token', () => {
    const token = generateToken();
    expect(hashToken(token)).not.toBe(token);
    expect(hashToken(token)).not.toContain(token.slice(TOKEN_PREFIX.length));
    expect(hashToken(token)).toBe(hashToken(token));
  });

  it('differs for tokens that differ by one character', () => {
    const token = generateToken();
    expect(hashToken(token)).not.toBe(hashToken(withCharChanged(token, 10)));
  });
});

describe('tokenDisplayPrefix', () => {
  it('shows "fw_" and the first 4 characters of the secret only', () => {
    const token = generateToken();
    const shown = tokenDisplayPrefix(token);
    expect(shown).toBe(token.slice(0, 7));
    expect(shown).toMatch(/^fw_[0-9A-Za-z]{4}$/);
  });
});
