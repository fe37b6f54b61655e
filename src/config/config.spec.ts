import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  demoOnFirstStart,
  demoSignInOnFirstStart,
  ConfigError,
  listenAddress,
  loadConfig,
  projectRoot,
} from './config';

/** The ConfigError loadConfig throws for `env` (fails the test when it does not throw one). */
function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

/** A webhook secret key (32 bytes): production refuses to start without one. */
const KEY = 'Zm9ybXdvcmsgdGVzdCB3ZWJob29rIHNlY3JldCBrZXk=';

describe('loadConfig', () => {
  describe('defaults', () => {
    const config = loadConfig({});

    it('listens on port 3000 with a public URL on that port', () => {
      expect(config.port).toBe(3000);
      expect(config.publicUrl).toBe('http://localhost:3000');
    });

    it('allows 120 requests a minute per credential and 240 per IP', () => {
      expect(config.rateLimit).toEqual({ credentialPerMin: 120, ipPerMin: 240, enabled: true });
    });

    it('uses the embedded database under ./data, in-process counters and no proxy trust', () => {
      expect(config.databaseUrl).toBeUndefined();
      expect(config.dataDir).toBe(resolve(__dirname, '..', '..', 'data'));
      expect(config.redisUrl).toBeUndefined();
      expect(config.trustProxy).toBe(false);
    });

    it('sends no deprecation or sunset dates', () => {
      expect(config.apiV1Deprecation).toBeUndefined();
      expect(config.apiV1Sunset).toBeUndefined();
    });

    it('bootstraps the demo outside production, on the embedded database only', () => {
      expect(config.production).toBe(false);
      expect(demoOnFirstStart(config, true)).toBe(true);
      expect(demoOnFirstStart(config, false)).toBe(false);
    });

    it('prints a demo sign-in (settings URL, email, password) only on the embedded database, never in production', () => {
      expect(demoSignInOnFirstStart(config, true)).toBe(true);
      expect(demoSignInOnFirstStart(config, false)).toBe(false);
      const production = loadConfig({
        NODE_ENV: 'production',
        PUBLIC_URL: 'http://formwork.example',
        BOOTSTRAP_DEMO: 'true',
        WEBHOOK_SECRET_KEY: KEY,
      });
      expect(demoSignInOnFirstStart(production, true)).toBe(false);
    });

    it('reads nothing from process.env when given its own env', () => {
      const saved = process.env.PORT;
      process.env.PORT = '4999';
      try {
        expect(loadConfig({}).port).toBe(3000);
      } finally {
        if (saved === undefined) delete process.env.PORT;
        else process.env.PORT = saved;
      }
    });
  });

  describe('values it reads', () => {
    it('derives the public URL from PORT when PUBLIC_URL is unset', () => {
      const config = loadConfig({ PORT: '8080' });
      expect(config.port).toBe(8080);
      expect(config.publicUrl).toBe('http://localhost:8080');
    });

    it('takes PUBLIC_URL without its trailing slash', () => {
      expect(loadConfig({ PUBLIC_URL: 'https://forms.example.com/', TRUST_PROXY: '1' }).publicUrl).toBe(
        'https://forms.example.com',
      );
    });

    it('takes MCP_ALLOWED_ORIGINS as a list of origins, and stops on one that is not an origin', () => {
      expect(loadConfig({}).mcpAllowedOrigins).toEqual([]);
      expect(
        loadConfig({ MCP_ALLOWED_ORIGINS: 'https://app.example, http://localhost:6274' }).mcpAllowedOrigins,
      ).toEqual(['https://app.example', 'http://localhost:6274']);
      for (const bad of ['app.example', 'https://app.example/path', 'ftp://app.example', '*']) {
        expect(configError({ MCP_ALLOWED_ORIGINS: bad }).message).toContain('MCP_ALLOWED_ORIGINS');
      }
    });

    it('takes the rate limits as numbers', () => {
      expect(loadConfig({ RATE_LIMIT_CREDENTIAL_PER_MIN: '5', RATE_LIMIT_IP_PER_MIN: '10000' }).rateLimit).toEqual({
        credentialPerMin: 5,
        ipPerMin: 10000,
        enabled: true,
      });
    });

    it('bounds every wait on the database: 3 s to connect, 5 s a statement, 5 s a lock, 15 s idle in a transaction', () => {
      expect(loadConfig({}).databaseTimeouts).toEqual({
        connectMs: 3000,
        statementMs: 5000,
        lockMs: 5000,
        idleInTransactionMs: 15_000,
      });
      expect(
        loadConfig({
          DATABASE_CONNECT_TIMEOUT_MS: '1000',
          DATABASE_STATEMENT_TIMEOUT_MS: '30000',
          DATABASE_LOCK_TIMEOUT_MS: '500',
          DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '60000',
        }).databaseTimeouts,
      ).toEqual({ connectMs: 1000, statementMs: 30_000, lockMs: 500, idleInTransactionMs: 60_000 });
    });

    it('refuses a database timeout of 0 (no bound) or not a number, naming the variable', () => {
      expect(configError({ DATABASE_STATEMENT_TIMEOUT_MS: '0' }).message).toMatch(/^DATABASE_STATEMENT_TIMEOUT_MS="0"/);
      expect(configError({ DATABASE_LOCK_TIMEOUT_MS: '2s' }).message).toMatch(
        /^DATABASE_LOCK_TIMEOUT_MS="2s" is not valid: .*integer/,
      );
    });

    it('turns the rate limits off only when asked', () => {
      expect(loadConfig({ RATE_LIMIT_ENABLED: 'false' }).rateLimit.enabled).toBe(false);
      expect(loadConfig({ RATE_LIMIT_ENABLED: 'true' }).rateLimit.enabled).toBe(true);
    });

    it('takes redis:// and rediss:// URLs, a compose service name included', () => {
      expect(loadConfig({ REDIS_URL: 'redis://redis:6379' }).redisUrl).toBe('redis://redis:6379');
      expect(loadConfig({ REDIS_URL: 'rediss://:secret@cache.example.com:6380/1' }).redisUrl).toBe(
        'rediss://:secret@cache.example.com:6380/1',
      );
    });

    it('takes a Redis Cluster as startup nodes, TLS and credentials from a URL entry', () => {
      expect(loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:6379, [::1]:7000' }).redisCluster).toEqual({
        nodes: [
          { host: '10.0.0.1', port: 6379 },
          { host: '::1', port: 7000 },
        ],
        username: undefined,
        password: undefined,
        tls: false,
      });
      expect(
        loadConfig({ REDIS_CLUSTER_NODES: 'rediss://app:s%40cret@a.cache.example.com:6379,b.cache.example.com:6379' })
          .redisCluster,
      ).toMatchObject({ username: 'app', password: 's@cret', tls: true, nodes: [{ port: 6379 }, { port: 6379 }] });
      expect(loadConfig({}).redisCluster).toBeUndefined();
      // The entry's number, not its text (a URL may hold the password).
      expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'redis://:hunter2@cache,other:1' })).toThrow(
        /^REDIS_CLUSTER_NODES: entry 1 is not host:port/,
      );
      expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'redis://:hunter2@cache' })).not.toThrow(/hunter2/);
      expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'rediss://a:1,redis://b:1' })).toThrow(/different/);
    });

    it('points the deprecation link at the docs unless told otherwise', () => {
      expect(loadConfig({ PUBLIC_URL: 'https://forms.example.com', TRUST_PROXY: '1' }).apiV1DeprecationLink).toBe(
        'https://forms.example.com/docs',
      );
      expect(loadConfig({ API_V1_DEPRECATION_LINK: 'https://example.com/changelog#v2' }).apiV1DeprecationLink).toBe(
        'https://example.com/changelog#v2',
      );
    });

    it('keeps files on disk without STORAGE_S3_BUCKET, and in the bucket with it (region us-east-1 by default)', () => {
      expect(loadConfig({}).storage.s3).toBeUndefined();
      expect(
        loadConfig({
          STORAGE_S3_BUCKET: 'forms',
          STORAGE_S3_ENDPOINT: 'http://minio:9000/',
          STORAGE_S3_ACCESS_KEY_ID: 'id',
          STORAGE_S3_SECRET_ACCESS_KEY: 'secret',
          STORAGE_S3_FORCE_PATH_STYLE: 'true',
        }).storage.s3,
      ).toEqual({
        bucket: 'forms',
        endpoint: 'http://minio:9000',
        region: 'us-east-1',
        credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
        forcePathStyle: true,
      });
      expect(loadConfig({ STORAGE_S3_BUCKET: 'forms', STORAGE_S3_REGION: 'auto' }).storage.s3).toMatchObject({
        endpoint: undefined,
        region: 'auto',
        credentials: undefined,
        forcePathStyle: false,
      });
    });

    it('refuses S3 settings without a bucket, half a key pair, or a bad bucket name, without echoing the secret', () => {
      expect(configError({ STORAGE_S3_ENDPOINT: 'http://minio:9000' }).message).toMatch(
        /STORAGE_S3_BUCKET must be set/,
      );
      const half = configError({ STORAGE_S3_BUCKET: 'forms', STORAGE_S3_SECRET_ACCESS_KEY: 'sup3rs3cret' });
      expect(half.message).toMatch(/must be set together/);
      expect(half.message).not.toContain('sup3rs3cret');
      expect(configError({ STORAGE_S3_BUCKET: 'Forms_1' }).message).toMatch(/STORAGE_S3_BUCKET.*bucket name/);
    });

    it('treats empty values as unset', () => {
      const config = loadConfig({
        PORT: '',
        RATE_LIMIT_IP_PER_MIN: '',
        BOOTSTRAP_DEMO: '',
        TRUST_PROXY: '',
        DATABASE_URL: '',
        REDIS_URL: '',
        RATE_LIMIT_ENABLED: '',
      });
      expect(config.port).toBe(3000);
      expect(config.rateLimit.ipPerMin).toBe(240);
      expect(config.bootstrapDemo).toBe('embedded');
      expect(config.trustProxy).toBe(false);
      expect(config.databaseUrl).toBeUndefined();
      expect(config.redisUrl).toBeUndefined();
      expect(config.rateLimit.enabled).toBe(true);
    });

    it('parses the deprecation and sunset dates', () => {
      const config = loadConfig({ API_V1_DEPRECATION: '2027-01-31', API_V1_SUNSET: '2027-07-31' });
      expect(config.apiV1Deprecation?.toISOString()).toBe('2027-01-31T00:00:00.000Z');
      expect(config.apiV1Sunset?.toISOString()).toBe('2027-07-31T00:00:00.000Z');
    });

    it('accepts HTTP-dates', () => {
      expect(loadConfig({ API_V1_SUNSET: 'Sun, 31 Jan 2027 00:00:00 GMT' }).apiV1Sunset?.toISOString()).toBe(
        '2027-01-31T00:00:00.000Z',
      );
    });
  });

  describe('TRUST_PROXY', () => {
    it('gives a hop count as a number', () => {
      expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
      expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    });

    it("keeps 'loopback' and subnet lists as strings", () => {
      expect(loadConfig({ TRUST_PROXY: 'loopback' }).trustProxy).toBe('loopback');
      expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.0.1' }).trustProxy).toBe('10.0.0.0/8, 192.168.0.1');
    });

    it("maps 'false' to no trust", () => {
      expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    });

    it("refuses 'true', which would let any client forge its address", () => {
      expect(configError({ TRUST_PROXY: 'true' }).message).toContain('TRUST_PROXY');
    });
  });

  describe('HOST and where the service listens', () => {
    it('listens everywhere by default, on loopback only on a start that prints a password, and where HOST says always', () => {
      expect(listenAddress(loadConfig({}), false)).toEqual({ kind: 'everywhere' });
      expect(listenAddress(loadConfig({}), true)).toEqual({ kind: 'loopback' });
      expect(listenAddress(loadConfig({ HOST: '' }), true)).toEqual({ kind: 'loopback' });
      for (const host of ['0.0.0.0', '::', '127.0.0.1', 'fe80::1%eth0', 'my-host.local']) {
        expect(listenAddress(loadConfig({ HOST: host }), true)).toEqual({ kind: 'host', host });
      }
    });

    it('refuses a HOST that is not one address or name, with a line naming it', () => {
      expect(configError({ HOST: 'http://0.0.0.0:3000/' }).message).toContain('HOST');
      expect(configError({ HOST: '0.0.0.0 ::' }).message).toContain('one address');
    });
  });

  describe('BOOTSTRAP_DEMO', () => {
    const demo = (env: Record<string, string>, embedded: boolean) => demoOnFirstStart(loadConfig(env), embedded);

    it('is off in production even when asked for, on any database', () => {
      const config = loadConfig({ NODE_ENV: 'production', BOOTSTRAP_DEMO: 'true', WEBHOOK_SECRET_KEY: KEY });
      expect(config.production).toBe(true);
      expect(demoOnFirstStart(config, true)).toBe(false);
      expect(demoOnFirstStart(config, false)).toBe(false);
    });

    it('is off in production by default', () => {
      expect(demo({ NODE_ENV: 'production', WEBHOOK_SECRET_KEY: KEY }, true)).toBe(false);
    });

    it('is on by default for the embedded database only, never for a DATABASE_URL server', () => {
      expect(demo({ NODE_ENV: 'development' }, true)).toBe(true);
      expect(demo({ NODE_ENV: 'development', DATABASE_URL: 'postgres://db/formwork' }, false)).toBe(false);
    });

    it.each(['false', '0', 'no', 'off', 'FALSE'])('can be turned off in development with %s', (value) => {
      expect(demo({ NODE_ENV: 'development', BOOTSTRAP_DEMO: value }, true)).toBe(false);
    });

    it.each(['true', '1', 'yes', 'on'])('with %s, is on for a DATABASE_URL server too', (value) => {
      expect(demo({ NODE_ENV: 'development', BOOTSTRAP_DEMO: value }, false)).toBe(true);
      expect(demo({ NODE_ENV: 'development', BOOTSTRAP_DEMO: value }, true)).toBe(true);
    });
  });

  describe('bad values stop start-up with a message naming the variable', () => {
    it.each([
      ['PORT', { PORT: 'abc' }],
      ['PORT', { PORT: '70000' }],
      ['PORT', { PORT: '80.5' }],
      ['RATE_LIMIT_IP_PER_MIN', { RATE_LIMIT_IP_PER_MIN: '0' }],
      ['RATE_LIMIT_CREDENTIAL_PER_MIN', { RATE_LIMIT_CREDENTIAL_PER_MIN: '-5' }],
      ['PUBLIC_URL', { PUBLIC_URL: 'notaurl' }],
      ['PUBLIC_URL', { PUBLIC_URL: 'ftp://example.com' }],
      ['BOOTSTRAP_DEMO', { BOOTSTRAP_DEMO: 'maybe' }],
      ['NODE_ENV', { NODE_ENV: 'staging' }],
      ['LOG_LEVEL', { LOG_LEVEL: 'verbose' }],
      ['API_V1_SUNSET', { API_V1_SUNSET: 'someday' }],
      ['API_V1_DEPRECATION', { API_V1_DEPRECATION: 'soon' }],
      ['API_V1_DEPRECATION_LINK', { API_V1_DEPRECATION_LINK: 'changelog' }],
      ['REDIS_URL', { REDIS_URL: 'localhost:6379' }],
      ['REDIS_URL', { REDIS_URL: 'http://cache:6379' }],
      ['RATE_LIMIT_ENABLED', { RATE_LIMIT_ENABLED: 'sometimes' }],
    ] as Array<[string, NodeJS.ProcessEnv]>)('%s in %j', (name, env) => {
      expect(configError(env).message).toContain(name);
    });

    it('says what kind of value is wanted when it is not a number at all', () => {
      expect(configError({ PORT: 'abc' }).message).toMatch(/integer/);
    });

    it('refuses production without WEBHOOK_SECRET_KEY (every instance must share it), and a key that is not 32 bytes, never echoing it', () => {
      expect(configError({ NODE_ENV: 'production' }).message).toMatch(/WEBHOOK_SECRET_KEY must be set in production/);
      const short = Buffer.alloc(16, 9).toString('base64');
      expect(configError({ WEBHOOK_SECRET_KEY: short }).message).toMatch(/WEBHOOK_SECRET_KEY must be the base64 of 32/);
      expect(configError({ WEBHOOK_SECRET_KEY: short }).message).not.toContain(short);
      expect(configError({ WEBHOOK_SECRET_KEY: KEY, WEBHOOK_SECRET_KEY_PREVIOUS: `${KEY},${short}` }).message).toMatch(
        /WEBHOOK_SECRET_KEY_PREVIOUS must be the base64 of 32/,
      );
      const config = loadConfig({
        NODE_ENV: 'production',
        WEBHOOK_SECRET_KEY: KEY,
        WEBHOOK_SECRET_KEY_PREVIOUS: ` ${KEY} ,`,
      });
      expect(config.webhooks.secretKey).toEqual(Buffer.from(KEY, 'base64'));
      expect(config.webhooks.previousSecretKeys).toEqual([Buffer.from(KEY, 'base64')]);
    });

    it('refuses an https PUBLIC_URL without TRUST_PROXY (secure cookies need the proxy believed)', () => {
      expect(configError({ PUBLIC_URL: 'https://forms.example.com' }).message).toContain('TRUST_PROXY');
      expect(() => loadConfig({ PUBLIC_URL: 'https://forms.example.com', TRUST_PROXY: '1' })).not.toThrow();
    });

    it('refuses TRUST_PROXY=TRUE in any case', () => {
      expect(configError({ TRUST_PROXY: 'TRUE' }).message).toContain('TRUST_PROXY');
    });

    it('says what a Redis URL must look like', () => {
      expect(configError({ REDIS_URL: 'localhost:6379' }).message).toContain('redis://');
    });

    it('quotes the bad value', () => {
      expect(configError({ PORT: 'abc' }).message).toContain('PORT="abc"');
    });

    it('refuses a sunset earlier than the deprecation', () => {
      const message = configError({ API_V1_DEPRECATION: '2027-06-01', API_V1_SUNSET: '2027-01-01' }).message;
      expect(message).toContain('API_V1_SUNSET');
      expect(message).toContain('API_V1_DEPRECATION');
    });

    it('accepts a sunset on the deprecation date', () => {
      expect(() => loadConfig({ API_V1_DEPRECATION: '2027-06-01', API_V1_SUNSET: '2027-06-01' })).not.toThrow();
    });

    it.each([
      'not a url',
      'postgres://[::1/x',
      'mysql://db/formwork',
      'postgres:///formwork',
      'postgres://app:50%off@db/formwork',
    ])('refuses the DATABASE_URL %p without quoting it (it may hold a password)', (url) => {
      const message = configError({ DATABASE_URL: url }).message;
      expect(message).toContain('DATABASE_URL');
      expect(message).not.toContain(url);
    });

    it.each([
      'postgres://app:s%40cret@db.internal:5432/formwork?sslmode=require',
      'postgresql://localhost/formwork',
      'postgres:///formwork?host=/var/run/postgresql',
    ])('accepts the DATABASE_URL %p', (url) => {
      expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url);
    });
  });
});

describe('email settings', () => {
  it('reads SMTP_URL, MAIL_FROM and DKIM; MAIL_FROM defaults to the public host', () => {
    expect(loadConfig({ PUBLIC_URL: 'http://forms.example.com' }).email).toMatchObject({
      smtpUrl: undefined,
      from: 'Formwork <formwork@forms.example.com>',
      dkim: undefined,
    });
    const c = loadConfig({
      SMTP_URL: 'smtps://u:p@mail.example.com:465',
      MAIL_FROM: 'Forms <forms@example.com>',
      MAIL_DKIM_DOMAIN: 'example.com',
      MAIL_DKIM_SELECTOR: 'fw',
      MAIL_DKIM_KEY: '-----BEGIN PRIVATE KEY-----\\nabc\\n-----END PRIVATE KEY-----',
    }).email;
    expect(c).toMatchObject({ smtpUrl: 'smtps://u:p@mail.example.com:465', from: 'Forms <forms@example.com>' });
    expect(c.dkim).toEqual({
      domainName: 'example.com',
      keySelector: 'fw',
      privateKey: '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----',
    });
  });

  it('refuses a bad SMTP_URL without echoing its password, and DKIM settings that do not go together', () => {
    expect(() => loadConfig({ SMTP_URL: 'http://user:hunter2@mail.example.com' })).toThrow(/^SMTP_URL is not valid/);
    expect(() => loadConfig({ SMTP_URL: 'http://user:hunter2@mail.example.com' })).not.toThrow(/hunter2/);
    expect(() => loadConfig({ MAIL_FROM: 'a@example.com\r\nBcc: x@example.com' })).toThrow(/MAIL_FROM/);
    expect(() => loadConfig({ MAIL_DKIM_DOMAIN: 'example.com' })).toThrow(/go together/);
  });
});

describe('DATA_DIR', () => {
  const root = resolve(__dirname, '..', '..');

  it('resolves a relative DATA_DIR against the project root, not the working directory', () => {
    const cwd = process.cwd();
    const elsewhere = mkdtempSync(join(tmpdir(), 'formwork-cwd-'));
    try {
      process.chdir(elsewhere);
      expect(loadConfig({ DATA_DIR: 'db-files' }).dataDir).toBe(join(root, 'db-files'));
      expect(loadConfig({}).dataDir).toBe(join(root, 'data'));
    } finally {
      process.chdir(cwd);
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('keeps an absolute DATA_DIR', () => {
    expect(loadConfig({ DATA_DIR: '/var/lib/formwork' }).dataDir).toBe('/var/lib/formwork');
  });

  it('finds the root from the built code too (dist/src/config -> the folder with package.json)', () => {
    const project = mkdtempSync(join(tmpdir(), 'formwork-root-'));
    try {
      writeFileSync(join(project, 'package.json'), '{}');
      expect(projectRoot(join(project, 'dist', 'src', 'config'))).toBe(project);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });
});
