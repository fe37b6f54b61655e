/**
 * The service's configuration: the environment read once at start, validated, typed (loadConfig).
 * The service and the admin CLI read process.env only through loadConfig (tests pass their own
 * env); the one other reader is TypeORM's migration CLI entry (database/typeorm-cli.ts), which
 * takes DATABASE_URL alone.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { plainToInstance, Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, IsUrl, Matches, Max, Min, validateSync } from 'class-validator';

const toInt = ({ value }: { value: unknown }) => (value === undefined || value === '' ? undefined : Number(value));
const emptyToUndefined = ({ value }: { value: unknown }) => (value === '' ? undefined : value);
const toBool = ({ value }: { value: unknown }) => {
  if (value === undefined || value === '') return undefined;
  const v = String(value).toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  return value; // left as a string so validation reports it
};

export class EnvSchema {
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT?: number;

  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @Matches(/^[0-9A-Za-z.:%_-]{1,255}$/, { message: 'must be one address or host name, e.g. 0.0.0.0, :: or 127.0.0.1' })
  HOST?: string;

  @IsOptional()
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] })
  PUBLIC_URL?: string;

  @IsOptional()
  @IsString()
  DATABASE_URL?: string;

  @IsOptional()
  @IsIn(['none', 'transaction'])
  DATABASE_POOLER?: string;

  @IsOptional()
  @IsString()
  DATABASE_DIRECT_URL?: string;

  @IsOptional()
  @IsString()
  DATABASE_REPLICA_URL?: string;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(60_000)
  DATABASE_REPLICA_MAX_WAIT_MS?: number;

  @IsOptional()
  @IsString()
  DATA_DIR?: string;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(65535)
  METRICS_PORT?: number;

  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @Matches(/^\S{16,}$/, {
    message: 'must be at least 16 characters without spaces (make one with: openssl rand -hex 32)',
  })
  METRICS_TOKEN?: string;

  @IsOptional()
  @Transform(emptyToUndefined)
  @IsUrl(
    { require_tld: false, require_protocol: true, protocols: ['redis', 'rediss'] },
    { message: 'must be a redis:// or rediss:// URL' },
  )
  REDIS_URL?: string;

  @IsOptional()
  @IsString()
  REDIS_CLUSTER_NODES?: string;

  @IsOptional()
  @IsString()
  TRUST_PROXY?: string;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  RATE_LIMIT_CREDENTIAL_PER_MIN?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  RATE_LIMIT_IP_PER_MIN?: number;

  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  RATE_LIMIT_ENABLED?: boolean;

  @IsOptional()
  @IsString()
  API_V1_DEPRECATION?: string;

  @IsOptional()
  @IsString()
  API_V1_SUNSET?: string;

  @IsOptional()
  @Transform(emptyToUndefined)
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] })
  API_V1_DEPRECATION_LINK?: string;

  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  BOOTSTRAP_DEMO?: boolean;

  @IsOptional()
  @IsIn(['development', 'production', 'test'])
  NODE_ENV?: string;

  @IsOptional()
  @IsIn(['debug', 'info', 'warn', 'error'])
  LOG_LEVEL?: string;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(200)
  DATABASE_POOL_SIZE?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(200)
  LONG_READS_PER_WORKSPACE?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(600_000)
  EXPORT_IDLE_TIMEOUT_MS?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  DATABASE_CONNECT_TIMEOUT_MS?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  DATABASE_STATEMENT_TIMEOUT_MS?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(50)
  @Max(600_000)
  DATABASE_LOCK_TIMEOUT_MS?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS?: number;

  @IsOptional()
  @IsString()
  MCP_ALLOWED_ORIGINS?: string;
  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  WEBHOOKS_ALLOW_PRIVATE_URLS?: boolean;

  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  OAUTH_CIMD_ALLOW_PRIVATE_URLS?: boolean;

  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  WEBHOOKS_DELIVERY?: boolean;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(60_000)
  WEBHOOKS_RETRY_BASE_MS?: number;

  @IsOptional()
  @IsString()
  WEBHOOK_SECRET_KEY?: string;

  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^smtps?:\/\/[^\s]+$/, {
    message: 'must be an smtp:// (STARTTLS) or smtps:// URL, e.g. smtp://user:pass@mail.example.com:587',
  })
  SMTP_URL?: string;

  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^[^\r\n]{3,320}$/, { message: 'must be one address, e.g. "Formwork <forms@example.com>"' })
  MAIL_FROM?: string;

  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^[A-Za-z0-9.-]{1,253}$/, { message: 'must be a domain name, e.g. example.com' })
  MAIL_DKIM_DOMAIN?: string;

  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^[A-Za-z0-9._-]{1,63}$/, { message: 'must be a DKIM selector, e.g. formwork' })
  MAIL_DKIM_SELECTOR?: string;

  @IsOptional()
  @IsString()
  MAIL_DKIM_KEY?: string;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(60_000)
  MAIL_RETRY_BASE_MS?: number;

  @IsOptional()
  @IsString()
  WEBHOOK_SECRET_KEY_PREVIOUS?: string;

  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, {
    message: 'must be a bucket name: 3-63 lowercase letters, digits, dots and hyphens',
  })
  STORAGE_S3_BUCKET?: string;

  @IsOptional()
  @Transform(emptyToUndefined)
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] })
  STORAGE_S3_ENDPOINT?: string;

  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^[a-z0-9-]{1,64}$/, { message: 'must be a region name, e.g. us-east-1 or auto' })
  STORAGE_S3_REGION?: string;

  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  STORAGE_S3_ACCESS_KEY_ID?: string;

  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  STORAGE_S3_SECRET_ACCESS_KEY?: string;

  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  STORAGE_S3_FORCE_PATH_STYLE?: boolean;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  UPLOAD_IDLE_TIMEOUT_MS?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3650)
  PARTIAL_RESPONSE_RETENTION_DAYS?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(600_000)
  SPAM_MIN_FILL_MS?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  SPAM_CHALLENGE_FORM_POSTS_PER_MIN?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  SPAM_CHALLENGE_IP_POSTS_PER_MIN?: number;

  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  CLIENT_IP_KEY?: string;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  PENDING_UPLOADS_PER_IP?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  PENDING_UPLOAD_MB_PER_IP?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  PENDING_UPLOADS_PER_FORM?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  PENDING_UPLOAD_MB_PER_FORM?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  OPEN_PARTIALS_PER_IP?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  OPEN_PARTIALS_PER_FORM?: number;
}

export type TrustProxy = boolean | number | string;

/**
 * Every wait on the database is bounded, so that a silent database or a silent session elsewhere
 * (a paused instance holding a lock) costs a request a 503 with Retry-After, never a hang.
 */
export interface DatabaseTimeouts {
  /** Waiting for a pooled connection, or for a new one to be made (DATABASE_CONNECT_TIMEOUT_MS, 3 s). */
  connectMs: number;
  /** One statement of a request path (DATABASE_STATEMENT_TIMEOUT_MS, 5 s); long paths raise it for their transaction. */
  statementMs: number;
  /** Waiting for a lock another session holds: a row, a form's sequencer (DATABASE_LOCK_TIMEOUT_MS, 5 s). */
  lockMs: number;
  /** A session left idle inside a transaction is ended by PostgreSQL, its locks freed (DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS, 15 s). */
  idleInTransactionMs: number;
}

export interface AppConfig {
  port: number;
  /** HOST: the one address to listen on; unset, see listenAddress. */
  host: string | undefined;
  publicUrl: string;
  databaseUrl: string | undefined;
  /** Absolute: a relative DATA_DIR is resolved against the project root (see projectRoot). */
  dataDir: string;
  redisUrl: string | undefined;
  /** REDIS_CLUSTER_NODES: budgets on a Redis Cluster; when set, REDIS_URL is not used. */
  redisCluster: RedisClusterSettings | undefined;
  trustProxy: TrustProxy;
  /** `enabled: false` (RATE_LIMIT_ENABLED=false) counts nothing and sends no RateLimit headers. */
  rateLimit: { credentialPerMin: number; ipPerMin: number; enabled: boolean };
  apiV1Deprecation: Date | undefined;
  apiV1Sunset: Date | undefined;
  /** Where the Link rel="deprecation" (and rel="sunset") header points: the changelog or migration guide. */
  apiV1DeprecationLink: string;
  /** When a first start on an empty database creates the demo: see demoOnFirstStart. */
  bootstrapDemo: 'embedded' | 'always' | 'never';
  production: boolean;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  databasePoolSize: number;
  /** Filtered reads and export downloads one workspace runs at once on one instance (see LongReads). */
  longReadsPerWorkspace: number;
  /** An export download whose client has taken nothing for this long is ended, its long-read slot freed. */
  exportIdleMs: number;
  /** How long the service waits on the database before it answers 503 (see database/data-source.ts). */
  databaseTimeouts: DatabaseTimeouts;
  /** DATABASE_POOLER: 'transaction' when DATABASE_URL is a pooler in transaction mode (PgBouncer, RDS Proxy). */
  databasePooler: 'none' | 'transaction';
  /** DATABASE_DIRECT_URL: a session of its own (migrations' lock, the CLI); defaults to databaseUrl. */
  databaseDirectUrl: string | undefined;
  /** DATABASE_REPLICA_URL: a streaming replica for the long reads (see database/replica.ts). */
  databaseReplicaUrl: string | undefined;
  /** How long a long read waits for the replica to catch up before it reads the primary (DATABASE_REPLICA_MAX_WAIT_MS). */
  databaseReplicaMaxWaitMs: number;
  /** Browser origins allowed to call /mcp besides PUBLIC_URL's (MCP_ALLOWED_ORIGINS), normalised. */
  mcpAllowedOrigins: string[];
  oauth: {
    /** Client metadata documents (CIMD) on loopback, private, link-local or metadata addresses (tests only). */
    cimdAllowPrivateUrls: boolean;
  };
  webhooks: {
    /** Endpoints on loopback, private, link-local or metadata addresses, and http:// URLs (development and tests). */
    allowPrivateUrls: boolean;
    /** Whether this instance runs the delivery loop (every instance does by default). */
    deliver: boolean;
    /** The first retry delay; the whole schedule scales with it (5 s; lower only in tests). */
    retryBaseMs: number;
    /** Seals the endpoints' signing secrets at rest (WEBHOOK_SECRET_KEY); unset, see webhookSecretBox. */
    secretKey: Buffer | undefined;
    /** Older keys that still open secrets sealed under them (WEBHOOK_SECRET_KEY_PREVIOUS, comma-separated). */
    previousSecretKeys: Buffer[];
  };
  email: EmailSettings;
  /** Where uploaded files live: DATA_DIR/uploads, or the S3-compatible bucket STORAGE_S3_BUCKET names. */
  storage: {
    s3: S3Settings | undefined;
    /** An upload whose sender sends nothing for this long is cut with a 408 (UPLOAD_IDLE_TIMEOUT_MS, 30 s). */
    uploadIdleMs: number;
  };
  /** Partial responses not updated for this many days are deleted (PARTIAL_RESPONSE_RETENTION_DAYS, 30). */
  partialResponseRetentionDays: number;
  /**
   * Spam defence of the respondent pages (issue 47): a post sooner than minFillMs after its page
   * was first drawn is spam; under a form's spamProtection "auto", the challenge is required once
   * a form's or a client IP's page posts pass these per-minute rates (SPAM_MIN_FILL_MS 2000,
   * SPAM_CHALLENGE_FORM_POSTS_PER_MIN 120, SPAM_CHALLENGE_IP_POSTS_PER_MIN 20).
   */
  spam: { minFillMs: number; formPostsPerMin: number; ipPostsPerMin: number };
  /**
   * What the respondent page (no credential) may keep per client IP and per form: pending uploads
   * (count, bytes) and open partial responses (issue 45, 6.6). Counted in the database.
   */
  anonymousLimits: AnonymousLimits;
  /** CLIENT_IP_KEY: keys the hash of a client IP stored on those rows; unset, a key shared through the database. */
  clientIpKey: Buffer | undefined;
  /** GET /metrics: on METRICS_PORT when set, else on the public port with METRICS_TOKEN as a bearer. */
  metrics: { port: number | undefined; token: string | undefined };
}

/** Email (issue 48): without SMTP_URL messages wait in the outbox, sent once a server is configured. */
export interface EmailSettings {
  /** SMTP_URL: smtp:// (STARTTLS) or smtps://, credentials in it. */
  smtpUrl: string | undefined;
  /** MAIL_FROM, e.g. "Formwork <forms@example.com>". */
  from: string;
  /** MAIL_DKIM_DOMAIN, MAIL_DKIM_SELECTOR and MAIL_DKIM_KEY (PEM), all three or none. */
  dkim: { domainName: string; keySelector: string; privateKey: string } | undefined;
  /** The first retry delay; the schedule is the webhooks' (MAIL_RETRY_BASE_MS, 5 s; lower only in tests). */
  retryBaseMs: number;
}

export interface AnonymousLimits {
  /** PENDING_UPLOADS_PER_IP (100) and PENDING_UPLOAD_MB_PER_IP (2048, in bytes here). */
  uploadsPerIp: number;
  uploadBytesPerIp: number;
  /** PENDING_UPLOADS_PER_FORM (5000) and PENDING_UPLOAD_MB_PER_FORM (51200, in bytes here). */
  uploadsPerForm: number;
  uploadBytesPerForm: number;
  /** OPEN_PARTIALS_PER_IP (1000) and OPEN_PARTIALS_PER_FORM (200000). */
  partialsPerIp: number;
  partialsPerForm: number;
}

export interface S3Settings {
  bucket: string;
  /** Unset: AWS S3 of the region. */
  endpoint: string | undefined;
  region: string;
  /** Unset: the AWS SDK's default chain (environment, instance role). */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  /** Path-style addressing (endpoint/bucket/key), which MinIO, Ceph RGW and Garage usually need. */
  forcePathStyle: boolean;
}

export class ConfigError extends Error {}

export interface RedisClusterSettings {
  /** Startup nodes: the client learns the others (and the slots) from them. */
  nodes: Array<{ host: string; port: number }>;
  username?: string;
  password?: string;
  tls: boolean;
}

/**
 * REDIS_CLUSTER_NODES: `host:port,host:port,...`, each entry also as a redis:// or rediss:// URL;
 * the user, password and TLS written on any entry apply to every node (they must agree).
 */
function parseRedisCluster(raw: string | undefined): RedisClusterSettings | undefined {
  if (!raw) return undefined;
  const urls: URL[] = [];
  const nodes = raw.split(',').map((entry, i) => {
    const text = entry.trim();
    const written = /^rediss?:\/\//.test(text);
    let url: URL | undefined;
    try {
      url = new URL(written ? text : `redis://${text}`);
    } catch {
      url = undefined;
    }
    if (!url || !url.hostname || !url.port || !['redis:', 'rediss:'].includes(url.protocol))
      // The entry's number, not its text: a URL may hold the password.
      throw new ConfigError(
        `REDIS_CLUSTER_NODES: entry ${i + 1} is not host:port (or a redis:// or rediss:// URL with a port)`,
      );
    if (written) urls.push(url);
    return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port) };
  });
  if (new Set(urls.map((u) => `${u.protocol}${u.username}:${u.password}`)).size > 1)
    throw new ConfigError('REDIS_CLUSTER_NODES: the entries give different schemes or credentials');
  const first = urls[0];
  return {
    nodes,
    username: first?.username ? decodeURIComponent(first.username) : undefined,
    password: first?.password ? decodeURIComponent(first.password) : undefined,
    tls: first?.protocol === 'rediss:',
  };
}

function parseTrustProxy(raw: string | undefined): TrustProxy {
  if (raw === undefined || raw === '') return false;
  if (/^\d+$/.test(raw)) return Number(raw);
  if (raw.toLowerCase() === 'false') return false;
  // `true` trusts every hop, which lets any client forge X-Forwarded-For and get a fresh IP budget.
  if (raw.toLowerCase() === 'true') {
    throw new ConfigError(
      'TRUST_PROXY=true trusts any X-Forwarded-For; give the hop count (e.g. 1), "loopback" or subnets',
    );
  }
  return raw;
}

/**
 * The project root: the nearest folder above this module holding a package.json (src/config and
 * dist/src/config both lead there; /app in the image). A relative DATA_DIR is taken from there,
 * so the service and the CLI find the same database wherever they are started.
 */
export function projectRoot(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return process.cwd(); // no package.json above: a copied bundle
  }
}

/** A DATABASE_URL that the driver could only fail on later, with a stack trace or a hang. */
function checkDatabaseUrl(raw: string | undefined, name = 'DATABASE_URL'): void {
  if (!raw) return;
  const bad = (why: string) =>
    new ConfigError(
      `${name} is not a valid PostgreSQL URL: ${why} (expected postgres://user:password@host:5432/database)`,
    );
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad('it cannot be parsed as a URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')
    throw bad(`the scheme must be postgres:// or postgresql://, not ${url.protocol}//`);
  if (!url.hostname && !url.searchParams.get('host')) throw bad('it names no host');
  try {
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
  } catch {
    // Not echoed: the password is in it. Percent-encode special characters of the user and password.
    throw bad('the user name or password has a stray % (percent-encode special characters, e.g. %25 for %)');
  }
}

/** MCP_ALLOWED_ORIGINS: comma-separated origins (scheme, host, optional port), compared as URL.origin gives them. */
function parseOrigins(raw: string | undefined): string[] {
  if (!raw) return [];
  return raw
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '')
    .map((o) => {
      let url: URL | undefined;
      try {
        url = new URL(o);
      } catch {
        url = undefined;
      }
      if (!url || !/^https?:$/.test(url.protocol) || url.origin !== o.replace(/\/+$/, '').toLowerCase()) {
        throw new ConfigError(
          `MCP_ALLOWED_ORIGINS must list origins such as https://app.example (scheme, host, optional port; no path), got "${o}"`,
        );
      }
      return url.origin;
    });
}

/** A key of 32 bytes in base64 (openssl rand -base64 32); the value is never echoed. */
/** Settings whose value may hold a password or key: a refusal names them without their value. */
const SECRET_SETTINGS = new Set(['SMTP_URL', 'MAIL_DKIM_KEY', 'METRICS_TOKEN']);

function parseEmail(parsed: EnvSchema, publicUrl: string): EmailSettings {
  const dkim = [parsed.MAIL_DKIM_DOMAIN, parsed.MAIL_DKIM_SELECTOR, parsed.MAIL_DKIM_KEY];
  if (dkim.some(Boolean) && !dkim.every(Boolean))
    throw new Error('MAIL_DKIM_DOMAIN, MAIL_DKIM_SELECTOR and MAIL_DKIM_KEY go together: set all three or none');
  return {
    smtpUrl: parsed.SMTP_URL || undefined,
    from: parsed.MAIL_FROM || `Formwork <formwork@${new URL(publicUrl).hostname}>`,
    dkim: parsed.MAIL_DKIM_KEY
      ? {
          domainName: parsed.MAIL_DKIM_DOMAIN!,
          keySelector: parsed.MAIL_DKIM_SELECTOR!,
          // A PEM in one line of env: its newlines written as \n.
          privateKey: parsed.MAIL_DKIM_KEY.replace(/\\n/g, '\n'),
        }
      : undefined,
    retryBaseMs: parsed.MAIL_RETRY_BASE_MS ?? 5000,
  };
}

function parseKey(name: string, raw: string): Buffer {
  const key = Buffer.from(raw.trim(), 'base64');
  if (key.length !== 32 || !/^[A-Za-z0-9+/_-]+=*$/.test(raw.trim()))
    throw new ConfigError(`${name} must be the base64 of 32 random bytes (make one with: openssl rand -base64 32)`);
  return key;
}

function parseDate(name: string, raw: string | undefined): Date | undefined {
  if (!raw) return undefined;
  const d = new Date(raw);
  if (Number.isNaN(d.getTime()))
    throw new ConfigError(`${name} must be a date (e.g. 2027-01-31 or an HTTP-date), got "${raw}"`);
  return d;
}

/** STORAGE_S3_*: set together, or not at all (then files live on disk). */
function parseS3(parsed: EnvSchema): S3Settings | undefined {
  const keyId = parsed.STORAGE_S3_ACCESS_KEY_ID;
  const secret = parsed.STORAGE_S3_SECRET_ACCESS_KEY;
  if (!parsed.STORAGE_S3_BUCKET) {
    if (parsed.STORAGE_S3_ENDPOINT || keyId || secret)
      throw new ConfigError(
        'STORAGE_S3_BUCKET must be set when other STORAGE_S3_* settings are (without a bucket, files are kept under DATA_DIR/uploads)',
      );
    return undefined;
  }
  if (!keyId !== !secret)
    throw new ConfigError('STORAGE_S3_ACCESS_KEY_ID and STORAGE_S3_SECRET_ACCESS_KEY must be set together');
  return {
    bucket: parsed.STORAGE_S3_BUCKET,
    endpoint: parsed.STORAGE_S3_ENDPOINT?.replace(/\/+$/, ''),
    region: parsed.STORAGE_S3_REGION ?? 'us-east-1',
    credentials: keyId && secret ? { accessKeyId: keyId, secretAccessKey: secret } : undefined,
    forcePathStyle: parsed.STORAGE_S3_FORCE_PATH_STYLE ?? false,
  };
}

/** Validates the environment; throws ConfigError with one clear line on the first bad value. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const parsed = plainToInstance(EnvSchema, { ...env }, { excludeExtraneousValues: false });
  const errors = validateSync(parsed, { skipMissingProperties: false, forbidUnknownValues: false });
  if (errors.length > 0) {
    const e = errors[0];
    const c = e.constraints ?? {};
    // A value of the wrong kind fails every check; say the kind first ("must be an integer").
    const why = c.isInt ?? c.isBoolean ?? c.isUrl ?? c.isIn ?? Object.values(c)[0] ?? 'is invalid';
    // A setting that may hold a password or key is named, never echoed.
    const shown = SECRET_SETTINGS.has(e.property) ? e.property : `${e.property}=${JSON.stringify(env[e.property])}`;
    throw new ConfigError(`${shown} is not valid: ${why}`);
  }
  checkDatabaseUrl(parsed.DATABASE_URL);
  checkDatabaseUrl(parsed.DATABASE_DIRECT_URL, 'DATABASE_DIRECT_URL');
  checkDatabaseUrl(parsed.DATABASE_REPLICA_URL, 'DATABASE_REPLICA_URL');
  const port = parsed.PORT ?? 3000;
  const production = parsed.NODE_ENV === 'production';
  const deprecation = parseDate('API_V1_DEPRECATION', parsed.API_V1_DEPRECATION);
  const sunset = parseDate('API_V1_SUNSET', parsed.API_V1_SUNSET);
  if (deprecation && sunset && sunset.getTime() < deprecation.getTime()) {
    throw new ConfigError('API_V1_SUNSET must not be earlier than API_V1_DEPRECATION');
  }
  const publicUrl = (parsed.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/+$/, '');
  const trustProxy = parseTrustProxy(parsed.TRUST_PROXY);
  const secretKey = parsed.WEBHOOK_SECRET_KEY ? parseKey('WEBHOOK_SECRET_KEY', parsed.WEBHOOK_SECRET_KEY) : undefined;
  if (production && !secretKey)
    // Every instance must read what another sealed: a key made per instance would not do.
    throw new ConfigError(
      'WEBHOOK_SECRET_KEY must be set in production, the same on every instance: it encrypts the webhook signing secrets (make one with: openssl rand -base64 32)',
    );
  if (publicUrl.startsWith('https://') && trustProxy === false) {
    // The service speaks plain HTTP: an https address means TLS ends at a proxy, which must be
    // trusted to say so (X-Forwarded-Proto), or the sign-in's secure cookies cannot be set.
    throw new ConfigError(
      'PUBLIC_URL is https, so TLS ends at a proxy: set TRUST_PROXY (hop count, "loopback" or subnets) so that X-Forwarded-Proto is believed',
    );
  }
  return {
    port,
    host: parsed.HOST,
    publicUrl,
    databaseUrl: parsed.DATABASE_URL || undefined,
    dataDir: resolve(projectRoot(), parsed.DATA_DIR || './data'),
    redisUrl: parsed.REDIS_URL || undefined,
    redisCluster: parseRedisCluster(parsed.REDIS_CLUSTER_NODES),
    trustProxy,
    rateLimit: {
      credentialPerMin: parsed.RATE_LIMIT_CREDENTIAL_PER_MIN ?? 120,
      ipPerMin: parsed.RATE_LIMIT_IP_PER_MIN ?? 240,
      enabled: parsed.RATE_LIMIT_ENABLED ?? true,
    },
    apiV1Deprecation: deprecation,
    apiV1Sunset: sunset,
    apiV1DeprecationLink: parsed.API_V1_DEPRECATION_LINK ?? `${publicUrl}/docs`,
    // A demo token printed into a production log would be a live credential in the logs: never there.
    bootstrapDemo: production
      ? 'never'
      : parsed.BOOTSTRAP_DEMO === true
        ? 'always'
        : parsed.BOOTSTRAP_DEMO === false
          ? 'never'
          : 'embedded',
    production,
    logLevel: (parsed.LOG_LEVEL as AppConfig['logLevel']) ?? 'info',
    databasePoolSize: parsed.DATABASE_POOL_SIZE ?? 10,
    longReadsPerWorkspace: parsed.LONG_READS_PER_WORKSPACE ?? 2,
    exportIdleMs: parsed.EXPORT_IDLE_TIMEOUT_MS ?? 30_000,
    databaseTimeouts: {
      connectMs: parsed.DATABASE_CONNECT_TIMEOUT_MS ?? 3000,
      statementMs: parsed.DATABASE_STATEMENT_TIMEOUT_MS ?? 5000,
      lockMs: parsed.DATABASE_LOCK_TIMEOUT_MS ?? 5000,
      idleInTransactionMs: parsed.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS ?? 15_000,
    },
    databasePooler: parsed.DATABASE_POOLER === 'transaction' ? 'transaction' : 'none',
    databaseDirectUrl: parsed.DATABASE_DIRECT_URL || parsed.DATABASE_URL || undefined,
    databaseReplicaUrl: parsed.DATABASE_REPLICA_URL || undefined,
    databaseReplicaMaxWaitMs: parsed.DATABASE_REPLICA_MAX_WAIT_MS ?? 500,
    mcpAllowedOrigins: parseOrigins(parsed.MCP_ALLOWED_ORIGINS),
    oauth: { cimdAllowPrivateUrls: parsed.OAUTH_CIMD_ALLOW_PRIVATE_URLS ?? false },
    webhooks: {
      allowPrivateUrls: parsed.WEBHOOKS_ALLOW_PRIVATE_URLS ?? false,
      deliver: parsed.WEBHOOKS_DELIVERY ?? true,
      retryBaseMs: parsed.WEBHOOKS_RETRY_BASE_MS ?? 5000,
      secretKey,
      previousSecretKeys: (parsed.WEBHOOK_SECRET_KEY_PREVIOUS ?? '')
        .split(',')
        .filter((k) => k.trim() !== '')
        .map((k) => parseKey('WEBHOOK_SECRET_KEY_PREVIOUS', k)),
    },
    email: parseEmail(parsed, publicUrl),
    storage: { s3: parseS3(parsed), uploadIdleMs: parsed.UPLOAD_IDLE_TIMEOUT_MS ?? 30_000 },
    partialResponseRetentionDays: parsed.PARTIAL_RESPONSE_RETENTION_DAYS ?? 30,
    spam: {
      minFillMs: parsed.SPAM_MIN_FILL_MS ?? 2000,
      formPostsPerMin: parsed.SPAM_CHALLENGE_FORM_POSTS_PER_MIN ?? 120,
      ipPostsPerMin: parsed.SPAM_CHALLENGE_IP_POSTS_PER_MIN ?? 20,
    },
    anonymousLimits: {
      uploadsPerIp: parsed.PENDING_UPLOADS_PER_IP ?? 100,
      uploadBytesPerIp: (parsed.PENDING_UPLOAD_MB_PER_IP ?? 2048) * 1024 * 1024,
      uploadsPerForm: parsed.PENDING_UPLOADS_PER_FORM ?? 5000,
      uploadBytesPerForm: (parsed.PENDING_UPLOAD_MB_PER_FORM ?? 51_200) * 1024 * 1024,
      partialsPerIp: parsed.OPEN_PARTIALS_PER_IP ?? 1000,
      partialsPerForm: parsed.OPEN_PARTIALS_PER_FORM ?? 200_000,
    },
    clientIpKey: parsed.CLIENT_IP_KEY ? parseKey('CLIENT_IP_KEY', parsed.CLIENT_IP_KEY) : undefined,
    metrics: { port: parsed.METRICS_PORT, token: parsed.METRICS_TOKEN },
  };
}

/**
 * Whether a first start on an empty database creates the demo workspace and prints its token: by
 * default only on the embedded database (a laptop), on a DATABASE_URL server only when
 * BOOTSTRAP_DEMO=true says so, and never in production.
 */
export function demoOnFirstStart(config: Pick<AppConfig, 'bootstrapDemo'>, embedded: boolean): boolean {
  return config.bootstrapDemo === 'always' || (config.bootstrapDemo === 'embedded' && embedded);
}

/** Whether the first start also prints the demo owner's email and a generated password: embedded database, never production. */
export function demoSignInOnFirstStart(config: Pick<AppConfig, 'production'>, embedded: boolean): boolean {
  return embedded && !config.production;
}

/**
 * Where the service listens: HOST when set; else loopback only (127.0.0.1 and ::1) on a start that
 * prints the demo owner's password (a first start on the embedded database, outside production),
 * so that the printed password opens nothing to the network; else every interface (the Docker
 * image, any DATABASE_URL start, and every later start).
 */
export function listenAddress(
  config: Pick<AppConfig, 'host'>,
  printsPassword: boolean,
): { kind: 'host'; host: string } | { kind: 'loopback' } | { kind: 'everywhere' } {
  if (config.host) return { kind: 'host', host: config.host };
  return printsPassword ? { kind: 'loopback' } : { kind: 'everywhere' };
}

export const APP_CONFIG = Symbol('APP_CONFIG');

/**
 * RFC 9728 metadata of the tools API (or of the MCP connector, on /mcp), named in every 401 and
 * 403 insufficient_scope challenge.
 */
export function resourceMetadataUrl(config: AppConfig, resource: 'api/v1' | 'mcp' = 'api/v1'): string {
  return `${config.publicUrl}/.well-known/oauth-protected-resource/${resource}`;
}
