import { createLog, NestLog, prettyLine } from './logging';
import { runInRequestContext } from './request-context';

/** A production log writing into an array, one parsed entry per line. */
function capture(level: 'debug' | 'info' | 'warn' | 'error' = 'info') {
  const lines: string[] = [];
  const log = createLog({ logLevel: level, production: true }, { write: (line: string) => void lines.push(line) });
  return { log, lines, entries: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('the log', () => {
  it('writes one JSON object per line with a standard level name, an ISO-8601 time and a string msg', () => {
    const { log, lines, entries } = capture();
    log.info('started');
    log.warn({ ms: 3 });
    log.error(new Error('boom'));
    log.info(42 as unknown as string);
    expect(lines.every((l) => l.endsWith('\n') && l.indexOf('\n') === l.length - 1)).toBe(true);
    expect(entries().map((e) => [e.level, e.msg])).toEqual([
      ['info', 'started'],
      ['warn', ''],
      ['error', 'boom'],
      ['info', '42'],
    ]);
    for (const e of entries()) expect(e.time).toMatch(ISO);
  });

  it('adds the id of the request being served to every line written while serving it', async () => {
    const { log, entries } = capture();
    log.info('before');
    await runInRequestContext({ requestId: 'req-1' }, async () => {
      await Promise.resolve();
      log.info('during');
      log.info({ requestId: 'explicit' }, 'named');
    });
    log.info('after');
    expect(entries().map((e) => [e.msg, e.requestId])).toEqual([
      ['before', undefined],
      ['during', 'req-1'],
      ['named', 'explicit'],
      ['after', undefined],
    ]);
  });

  it('never writes a resume secret: not in a URL a message quotes, nor under a resume key', () => {
    const { log, lines, entries } = capture();
    const secret = 'Zm9ybXdvcmstcmVzdW1lLXNlY3JldC0xMjM0NTY3ODkw';
    log.warn(`Reply was already sent in the "/f/abc?resume=${secret}&lang=en" (GET) route`);
    log.info({ status: 200 }, `GET /f/abc?x=1&resume=${secret}`);
    log.info({ query: { resume: secret } }, 'resumed');
    expect(lines.join('')).not.toContain(secret);
    expect(entries().map((e) => e.msg)).toEqual([
      'Reply was already sent in the "/f/abc?resume=[redacted]&lang=en" (GET) route',
      'GET /f/abc?x=1&resume=[redacted]',
      'resumed',
    ]);
  });

  it('never writes authorization headers, cookies, passwords, tokens or OAuth codes', () => {
    const { log, lines } = capture();
    log.info(
      {
        authorization: 'Bearer fw_top',
        req: {
          headers: { authorization: 'Bearer fw_nested', cookie: 'sid=cookie-value', 'set-cookie': 'sid=set-value' },
        },
        body: {
          password: 'hunter2-password',
          code: 'oauth-code-in-body',
          refresh_token: 'refresh-value',
          csrf: 'csrf-value',
        },
        query: { code: 'oauth-code-in-query' },
        token: 'fw_token_field',
        code: 'oauth-code-top',
        client: { client_secret: 'secret-value', access_token: 'access-value' },
      },
      'a request',
    );
    const text = lines.join('');
    for (const secret of [
      'fw_top',
      'fw_nested',
      'cookie-value',
      'set-value',
      'hunter2',
      'oauth-code',
      'refresh-value',
      'csrf-value',
      'fw_token_field',
      'secret-value',
      'access-value',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('[redacted]');
  });

  it('redacts a flat line too (the access line skips the redaction walk only when no key is secret)', () => {
    const { log, entries, lines } = capture('debug');
    for (const key of ['authorization', 'cookie', 'set-cookie', 'password', 'token', 'csrf', 'code', 'access_token'])
      log.info({ path: '/x', [key]: `flat-secret-${key}` });
    expect(lines.join('')).not.toContain('flat-secret');
    expect(entries().every((e) => Object.values(e).includes('[redacted]'))).toBe(true);
    // A flat line with no secret key: every field as given, with the level, time and request id.
    runInRequestContext({ requestId: 'req-fast' }, () =>
      log.info({ method: 'POST', path: '/api/v1/tools/get_form', status: 200, ms: 1.5 }, 'request'),
    );
    expect(entries().at(-1)).toMatchObject({
      level: 'info',
      method: 'POST',
      path: '/api/v1/tools/get_form',
      status: 200,
      ms: 1.5,
      requestId: 'req-fast',
      msg: 'request',
    });
    expect(entries().at(-1)!.time).toMatch(ISO);
    // A child logger's lines keep its bindings and its redaction.
    log.child({ context: 'Http' }).info({ token: 'child-secret' }, 'child');
    expect(entries().at(-1)).toMatchObject({ context: 'Http', token: '[redacted]', msg: 'child' });
  });

  it('keeps error codes and SQL states readable', () => {
    const { log, entries } = capture();
    log.error({ err: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), sqlState: '42P01' }, 'failed');
    expect(entries()[0]).toMatchObject({ sqlState: '42P01', err: { code: 'ECONNREFUSED' } });
  });

  it('honours LOG_LEVEL', () => {
    const { log, entries } = capture('warn');
    log.info('hidden');
    log.warn('shown');
    expect(entries().map((e) => e.msg)).toEqual(['shown']);
  });
});

describe('NestLog (Nest Logger calls into the log)', () => {
  it('maps Nest levels, names the context and splits an object message into msg and fields', () => {
    const { log, entries } = capture('debug');
    const nest = new NestLog(log);
    nest.log('hello', 'Formwork');
    nest.warn({ msg: 'slow query', ms: 1200 }, 'Database');
    nest.error({ msg: 'request failed', path: '/x' }, 'Error: boom\n    at f (file.ts:1:1)', 'Errors');
    nest.error('no stack', undefined, 'Errors');
    nest.verbose('details', 'Tokens');
    nest.log('Mapped {/api/v1, GET} route', 'RouterExplorer'); // Nest's start-up lines: debug
    expect(entries()).toEqual([
      expect.objectContaining({ level: 'info', context: 'Formwork', msg: 'hello' }),
      expect.objectContaining({ level: 'warn', context: 'Database', msg: 'slow query', ms: 1200 }),
      expect.objectContaining({
        level: 'error',
        context: 'Errors',
        msg: 'request failed',
        path: '/x',
        stack: 'Error: boom\n    at f (file.ts:1:1)',
      }),
      expect.objectContaining({ level: 'error', context: 'Errors', msg: 'no stack' }),
      expect.objectContaining({ level: 'debug', context: 'Tokens', msg: 'details' }),
      expect.objectContaining({ level: 'debug', context: 'RouterExplorer', msg: 'Mapped {/api/v1, GET} route' }),
    ]);
  });

  it("leaves Nest's start-up lines out at info", () => {
    const { log, entries } = capture('info');
    new NestLog(log).log('AppModule dependencies initialized', 'InstanceLoader');
    expect(entries()).toEqual([]);
  });
});

describe('development output', () => {
  it('shows an entry as one readable line, and a stack on the lines after it', () => {
    const line = prettyLine(
      JSON.stringify({
        level: 'info',
        time: '2026-11-21T18:20:45.702Z',
        pid: 1,
        hostname: 'h',
        context: 'Http',
        requestId: 'abc',
        msg: 'request',
        method: 'GET',
        status: 200,
      }),
    );
    expect(line).toBe('18:20:45.702 INFO  [Http] request method=GET status=200 (req abc)\n');
    const failed = prettyLine(
      JSON.stringify({ level: 'error', time: '2026-11-21T18:20:45.702Z', msg: 'failed', stack: 'Error: x\n    at y' }),
    );
    expect(failed).toBe('18:20:45.702 ERROR failed\n    Error: x\n        at y\n');
  });
});
