import { ApiError } from '../common/errors/api-error';
import { fixedHidden, inviteState } from './invites.service';

const invite = (over: Partial<Parameters<typeof inviteState>[0]> = {}) => ({
  id: 'i',
  formId: 'f',
  hidden: {},
  email: null,
  expiresAt: null,
  createdAt: new Date('2026-01-01T00:00:00Z'),
  revokedAt: null,
  completedAt: null,
  responseId: null,
  ...over,
});

describe('inviteState', () => {
  const now = new Date('2026-06-01T00:00:00Z');
  it.each([
    ['unused', {}],
    ['started', { responseId: 'r' }],
    ['completed', { responseId: 'r', completedAt: now, revokedAt: now }],
    ['revoked', { revokedAt: now, expiresAt: new Date('2026-01-02T00:00:00Z') }],
    ['expired', { expiresAt: now, responseId: 'r' }],
    ['unused', { expiresAt: new Date('2026-06-01T00:00:01Z') }],
  ])('%s', (state, over) => {
    expect(inviteState(invite(over), now)).toBe(state);
  });
});

describe('fixedHidden', () => {
  it("adds the invitation's values and keeps others; the same value again is fine", () => {
    expect(fixedHidden({ source: 'mail', customer: 'c-1' }, { customer: 'c-1' })).toEqual({
      source: 'mail',
      customer: 'c-1',
    });
    expect(fixedHidden(undefined, { customer: 'c-1' })).toEqual({ customer: 'c-1' });
  });

  it('refuses a changed value at its path', () => {
    let thrown: unknown;
    try {
      fixedHidden({ 'a/b': 'x' }, { 'a/b': 'y' });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    expect((thrown as ApiError).code).toBe('invalid_arguments');
    expect((thrown as ApiError).details).toEqual([{ path: '/hidden/a~1b', message: 'is fixed by the invitation' }]);
  });
});
