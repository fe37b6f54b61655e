import { ApiError } from '../common/errors/api-error';
import {
  MemberAddArgs,
  noOptions,
  parseDuration,
  parseFlags,
  TokenCreateArgs,
  validateArgs,
  WorkspaceCreateArgs,
} from './cli-args';

/** The ApiError `fn` throws (fails the test when it does not throw). */
function thrown(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return e as ApiError;
  }
  throw new Error('no error was thrown');
}

describe('parseFlags', () => {
  it('separates positional words from --name value flags', () => {
    expect(parseFlags(['token', 'create', '--workspace', 'acme', '--name', 'CI bot'])).toEqual({
      positional: ['token', 'create'],
      flags: { workspace: 'acme', name: 'CI bot' },
    });
  });

  it('takes --name=value', () => {
    expect(parseFlags(['--workspace=acme', '--role=viewer']).flags).toEqual({ workspace: 'acme', role: 'viewer' });
  });

  it('treats a flag followed by another flag, or by nothing, as a switch', () => {
    expect(parseFlags(['token', 'list', '--json', '--workspace', 'acme']).flags).toEqual({
      json: true,
      workspace: 'acme',
    });
    expect(parseFlags(['demo', '--json']).flags).toEqual({ json: true });
  });

  it('splits --name=value at the first = only', () => {
    expect(parseFlags(['--name=Team=Alpha']).flags).toEqual({ name: 'Team=Alpha' });
  });

  it('keeps an empty --name= value as an empty string', () => {
    expect(parseFlags(['--scopes=']).flags).toEqual({ scopes: '' });
  });

  it('gives empty results for no arguments', () => {
    expect(parseFlags([])).toEqual({ positional: [], flags: {} });
  });
});

describe('validateArgs', () => {
  const tokenFlags = { workspace: 'acme', name: 'CI bot' };

  it('returns the options of a valid command, without --json', () => {
    const args = validateArgs(TokenCreateArgs, {
      ...tokenFlags,
      role: 'viewer',
      scopes: 'forms:read,responses:read',
      'expires-in': '90d',
      json: true,
    });
    expect(args).toBeInstanceOf(TokenCreateArgs);
    expect({ ...args }).toEqual({
      ...tokenFlags,
      role: 'viewer',
      scopes: 'forms:read,responses:read',
      'expires-in': '90d',
    });
  });

  it('leaves optional options out', () => {
    expect({ ...validateArgs(TokenCreateArgs, tokenFlags) }).toEqual(tokenFlags);
  });

  it('refuses an unknown option as invalid_arguments, naming it', () => {
    const e = thrown(() => validateArgs(TokenCreateArgs, { ...tokenFlags, colour: 'red' }));
    expect(e.code).toBe('invalid_arguments');
    expect(e.status).toBe(400);
    expect(e.details).toEqual([{ path: '--colour', message: 'is not an option of this command' }]);
    expect(e.message).toContain('--colour');
  });

  it('refuses a role that does not exist, listing the roles', () => {
    const e = thrown(() => validateArgs(TokenCreateArgs, { ...tokenFlags, role: 'superuser' }));
    expect(e.details).toHaveLength(1);
    expect(e.details![0].path).toBe('--role');
    expect(e.details![0].message).toContain('viewer, editor, admin, owner');
  });

  it.each(['forms:read,', 'forms:read forms:write', 'forms:admin', 'forms:read,,forms:write'])(
    'refuses the scopes %p',
    (scopes) => {
      const e = thrown(() => validateArgs(TokenCreateArgs, { ...tokenFlags, scopes }));
      expect(e.details!.map((d) => d.path)).toEqual(['--scopes']);
    },
  );

  it.each(['90', '3w', 'd', '-1d', '1.5h', ''])('refuses the expiry %p', (expiresIn) => {
    const e = thrown(() => validateArgs(TokenCreateArgs, { ...tokenFlags, 'expires-in': expiresIn }));
    expect(e.details).toEqual([{ path: '--expires-in', message: 'expires-in must be like 30m, 12h or 90d' }]);
  });

  it.each(['30m', '12h', '90d'])('accepts the expiry %p', (expiresIn) => {
    expect(validateArgs(TokenCreateArgs, { ...tokenFlags, 'expires-in': expiresIn })['expires-in']).toBe(expiresIn);
  });

  it('refuses a required option that is missing or given without a value', () => {
    const e = thrown(() => validateArgs(TokenCreateArgs, { workspace: true }));
    expect(e.details!.map((d) => d.path).sort()).toEqual(['--name', '--workspace']);
  });

  it('reports every bad option at once', () => {
    const e = thrown(() =>
      validateArgs(TokenCreateArgs, { ...tokenFlags, bogus: 'x', role: 'god', 'expires-in': 'soon' }),
    );
    expect(e.details!.map((d) => d.path).sort()).toEqual(['--bogus', '--expires-in', '--role']);
  });

  it('checks workspace create: slug, plan and owner email', () => {
    const good = { name: 'Acme', slug: 'acme-co', plan: 'pro', 'owner-email': 'owner@acme.test' };
    expect({ ...validateArgs(WorkspaceCreateArgs, good) }).toEqual(good);
    const e = thrown(() =>
      validateArgs(WorkspaceCreateArgs, { name: 'Acme', slug: 'Acme Co', plan: 'enterprise', 'owner-email': 'nobody' }),
    );
    expect(e.details!.map((d) => d.path).sort()).toEqual(['--owner-email', '--plan', '--slug']);
  });

  it('checks member add: email and role', () => {
    expect(() =>
      validateArgs(MemberAddArgs, { workspace: 'acme', email: 'a@acme.test', role: 'editor' }),
    ).not.toThrow();
    const e = thrown(() => validateArgs(MemberAddArgs, { workspace: 'acme', email: 'a@acme.test', role: 'boss' }));
    expect(e.details!.map((d) => d.path)).toEqual(['--role']);
  });
});

describe('token expiry', () => {
  it('refuses --expires-in 0d, which would make a token that is already expired', () => {
    const error = thrown(() => validateArgs(TokenCreateArgs, { workspace: 'acme', name: 'x', 'expires-in': '0d' }));
    expect(error.details).toEqual([{ path: '--expires-in', message: 'expires-in must be like 30m, 12h or 90d' }]);
  });

  it.each(['3650d', '87600h', '5256000m'])('accepts %p, ten years', (expiresIn) => {
    expect(validateArgs(TokenCreateArgs, { workspace: 'acme', name: 'x', 'expires-in': expiresIn })['expires-in']).toBe(
      expiresIn,
    );
  });

  it.each(['3651d', '87601h', '5256001m', '99999999999d', '9'.repeat(400) + 'd'])(
    'refuses %p, beyond ten years (a Date cannot even hold some)',
    (expiresIn) => {
      const error = thrown(() =>
        validateArgs(TokenCreateArgs, { workspace: 'acme', name: 'x', 'expires-in': expiresIn }),
      );
      expect(error.details).toEqual([{ path: '--expires-in', message: 'expires-in must be at most 3650d (10 years)' }]);
    },
  );
});

describe('missing options', () => {
  it('are reported as required, whatever else their checks say', () => {
    const error = thrown(() => validateArgs(TokenCreateArgs, {}));
    expect(error.details).toEqual([
      { path: '--workspace', message: 'is required' },
      { path: '--name', message: 'is required' },
    ]);
  });
});

describe('noOptions', () => {
  it('accepts no options, or only --json', () => {
    expect(() => noOptions({})).not.toThrow();
    expect(() => noOptions({ json: true })).not.toThrow();
  });

  it('refuses any other option, naming each', () => {
    const e = thrown(() => noOptions({ json: true, force: true, name: 'x' }));
    expect(e.code).toBe('invalid_arguments');
    expect(e.details).toEqual([
      { path: '--force', message: 'is not an option of this command' },
      { path: '--name', message: 'is not an option of this command' },
    ]);
  });
});

describe('parseDuration', () => {
  it('reads minutes, hours and days as milliseconds', () => {
    expect(parseDuration('30m')).toBe(30 * 60_000);
    expect(parseDuration('12h')).toBe(12 * 3_600_000);
    expect(parseDuration('90d')).toBe(90 * 86_400_000);
    expect(parseDuration('1d')).toBe(24 * parseDuration('1h'));
  });
});
