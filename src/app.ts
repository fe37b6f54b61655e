import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import middie from '@fastify/middie';
import { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest, LogController } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module';
import { ApiError } from './common/errors/api-error';
import { ApiExceptionFilter, pathOf, sendError } from './common/errors/api-exception.filter';
import { checkContentEncoding } from './common/errors/request-checks';
import { useLeanAsyncResourceBind } from './common/http/async-resource-bind';
import { isJsonRequest, JSON_BODY_LIMIT, registerBodyParsers } from './common/http/body';
import { RouteMethods } from './common/http/route-methods';
import { refuseUnstorableText } from './common/http/unstorable-text';
import { Log, NestLog } from './common/logging';
import { runInRequestContext } from './common/request-context';
import { AppConfig } from './config/config';
import { idempotencyKeyConstraint } from './idempotency/idempotency-key.constraint';
import { SCOPES } from './common/access/roles';
import { DOCS_CLIENT_ID } from './oauth/oauth-config';
import { createOAuthProvider, OAuthProviderRef } from './oauth/oauth-provider';
import { checkOAuthInput } from './oauth/unstorable-input';
import { ipRateLimit, settleDeferredIpBudget } from './rate-limit/ip-rate-limit.hook';
import { RateLimitService } from './rate-limit/rate-limit.service';
import { mcpOriginCheck } from './mcp/mcp-origin.hook';
import { observeRequests, publicMetricsRoute } from './observability/http-observer';
import { prefersJson } from './respondent/page-headers';
import { DiskFileStorage } from './storage/disk-file-storage';
import { diskUploadRoute } from './storage/disk-upload.route';
import { FileStorage } from './storage/file-storage';
import { buildOpenApiDocument, docsContentSecurityPolicy } from './tools/openapi';
import { ToolRegistry } from './tools/tool-registry.service';
import { apiV1VersionHeaders, deprecationHeaders } from './versioning/version-headers';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * CORS for browser callers. Credentials travel in the Authorization header, never in cookies, so
 * any origin may call; the exposed headers are the ones a client needs to read. Lists are sent
 * comma-separated without spaces, as before the move to Fastify.
 */
const CORS = {
  origin: '*',
  methods: 'GET,HEAD,POST',
  // The MCP transport's headers too, for browser-based MCP clients (on an origin MCP_ALLOWED_ORIGINS lists).
  allowedHeaders:
    'Authorization,Content-Type,Idempotency-Key,X-Request-Id,Mcp-Protocol-Version,Mcp-Session-Id,Last-Event-ID',
  exposedHeaders: [
    'WWW-Authenticate',
    'RateLimit-Limit',
    'RateLimit-Remaining',
    'RateLimit-Reset',
    'RateLimit-Policy',
    'RateLimit',
    'X-RateLimit-Limit',
    'X-RateLimit-Remaining',
    'X-RateLimit-Reset',
    'Retry-After',
    'Idempotency-Replayed',
    'Deprecation',
    'Sunset',
    'Link',
    'X-Request-Id',
    'Mcp-Session-Id',
  ].join(','),
  maxAge: 86_400,
  // Every OPTIONS request is answered as a preflight (204), with or without Origin, never a 400.
  strictPreflight: false,
};

export interface CreateAppOptions {
  /**
   * Mount the OAuth authorization server (default true). oidc-provider is ESM-only, which jest's
   * CommonJS runtime cannot load: the in-process test app runs without it, and the OAuth flow is
   * tested against the built service (test/oauth, node --test).
   */
  oauth?: boolean;
}

/**
 * Builds the HTTP application exactly as it runs in production; tests call this too, so they
 * exercise the same hooks, filter and guards. It is ready to serve when returned. A request goes
 * through Fastify's request hooks in this order: request id, nosniff and the log context; CORS (a
 * preflight spends no budget); version headers (on every /api/v1 answer, a 429 included); the IP
 * budget, /mcp's Origin check and the Content-Encoding check (before any body is read); the OAuth server's own
 * endpoints. Then the body is read (see common/http/body.ts) and Nest's guards, interceptors and
 * controller run; every refusal becomes the envelope in ApiExceptionFilter.
 */
export async function createApp(
  config: AppConfig,
  databaseUrl: string,
  log: Log | false,
  options: CreateAppOptions = {},
): Promise<NestFastifyApplication> {
  // Node 20's AsyncResource#bind, which Fastify's body parser calls per request, without its
  // costly deprecated property (see the function).
  useLeanAsyncResourceBind();
  const adapter = new FastifyAdapter({
    // Same semantics as Express's "trust proxy": a hop count, "loopback", or addresses and subnets.
    trustProxy: config.trustProxy,
    bodyLimit: JSON_BODY_LIMIT,
    // A client may name its request (1-128 of A-Za-z0-9._:-); anything else gets a fresh id.
    requestIdHeader: false,
    genReqId: (req: IncomingMessage) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    // Longer than a load balancer's idle timeout (nginx: 60 s), so it never reuses a closing connection.
    keepAliveTimeout: 65_000,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // A path Fastify cannot decode (bad percent-encoding) gets the envelope like every other error.
    frameworkErrors: (error: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
      reply.header('X-Request-Id', req.id);
      sendError(
        reply,
        new ApiError('invalid_arguments', {
          message: `The request path cannot be read: ${error.message}.`,
          hint: 'Percent-encode the path as UTF-8.',
        }),
        req.id,
      );
    },
    // middie (for the OAuth server's callback) is registered below, after the early hooks.
    skipMiddie: true,
    // Fastify's own messages go to the same log; the request id comes from the request context, and
    // the one access line per request is ours (below).
    ...(log
      ? {
          loggerInstance: log,
          childLoggerFactory: (logger: FastifyBaseLogger) => logger,
          logController: new LogController({ disableRequestLogging: true }),
        }
      : { logger: false }),
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, databaseUrl), adapter, {
    bodyParser: false,
    abortOnError: false, // throw to the caller (main prints one line; tests see the error)
    logger: log ? new NestLog(log) : false,
  });
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
  // Before the routes are registered (app.init): the tool route has a variant for keyed calls.
  fastify.addConstraintStrategy(idempotencyKeyConstraint);
  const routes = new RouteMethods(fastify);
  registerBodyParsers(fastify);

  // The first request hook: the request id on the answer, and the log context of everything the
  // request does (Fastify reads the body in that context too).
  adapter.setOnRequestHook((req, reply, done) => {
    reply.raw.setHeader('X-Request-Id', req.id);
    // On every answer, errors and pages included: browsers must take each as the type it says.
    reply.raw.setHeader('X-Content-Type-Options', 'nosniff');
    runInRequestContext({ requestId: req.id }, done);
  });
  if (log && log.isLevelEnabled('info')) {
    // One line per request, once it is answered; the path without its query string, which could hold anything.
    fastify.addHook('onResponse', (req, reply, done) => {
      log.info(
        {
          requestId: req.id,
          context: 'Http',
          method: req.method,
          path: pathOf(req.originalUrl),
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 100) / 100,
          ip: req.ip,
          ...(req.principal ? { credential: req.principal.credential.id } : {}),
        },
        'request',
      );
      done();
    });
  }
  const tools = app.get(ToolRegistry);
  observeRequests(fastify, (name) => tools.get(name) !== undefined);
  app.enableCors(CORS);
  if (Object.keys(deprecationHeaders(config)).length > 0) fastify.addHook('onRequest', apiV1VersionHeaders(config));
  const rateLimit = app.get(RateLimitService);
  fastify.addHook('onRequest', ipRateLimit(rateLimit));
  fastify.addHook('onSend', settleDeferredIpBudget(rateLimit));
  // /mcp refuses browser pages of other origins (DNS rebinding) before authentication.
  fastify.addHook('onRequest', mcpOriginCheck(config));
  // Compressed bodies are refused on every route (the OAuth server's included) before anything reads them.
  fastify.addHook('onRequest', (req, _reply, done) => done(checkContentEncoding(req.headers)));
  // Text PostgreSQL cannot store (NUL, lone surrogates) is refused once the route is known and the
  // body read, on every route, in the route's format; the tool calls check it at their arguments
  // step, and the respondent's form its answers at their fields.
  fastify.addHook(
    'preValidation',
    refuseUnstorableText({
      checkedByRoute: {
        '/api/v1/tools/:name': ['path', 'query', 'body'],
        '/mcp': ['path', 'query', 'body'],
        '/f/:publicId': ['path', 'body'],
      },
      isPage: (req) => isPageRoute(req.routeOptions.url) && !isJsonRequest(req) && !prefersJson(req.headers.accept),
    }),
  );
  await app.register(middie);
  // Files on disk arrive through the service's own upload endpoint (with S3 they go to the bucket).
  const storage = app.get(FileStorage);
  if (storage instanceof DiskFileStorage) await fastify.register(diskUploadRoute(storage));
  if (options.oauth !== false) await mountOAuth(app, config);

  app.useGlobalFilters(new ApiExceptionFilter((path) => routes.allowed(path)));

  // Built on first use (the tool registry is filled at init).
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  const openApi = () => (document ??= buildOpenApiDocument(app, config));
  fastify.get('/openapi.json', async () => openApi());
  publicMetricsRoute(fastify, config);
  // Swagger UI runs only its own scripts: the page and its assets get a CSP of their own.
  const docsCsp = docsContentSecurityPolicy(config);
  fastify.addHook('onRequest', (req, reply, done) => {
    if (req.url === '/docs' || req.url.startsWith('/docs/') || req.url.startsWith('/docs?'))
      reply.raw.setHeader('Content-Security-Policy', docsCsp);
    done();
  });
  SwaggerModule.setup('docs', app, openApi, {
    jsonDocumentUrl: '/docs/openapi.json',
    yamlDocumentUrl: '/docs/openapi.yaml',
    customSiteTitle: 'Formwork API',
    // No badge from validator.swagger.io: it would send the document's address to a third party.
    // "Authorize" with OAuth signs in through the built-in server with its built-in public client.
    swaggerOptions: {
      validatorUrl: null,
      oauth2RedirectUrl: `${config.publicUrl}/docs/oauth2-redirect.html`,
      initOAuth: { clientId: DOCS_CLIENT_ID, usePkceWithAuthorizationCodeGrant: true, scopes: [...SCOPES] },
    },
  });
  await app.init();
  await fastify.ready();
  return app;
}

/** The routes of server-rendered pages: settings, the sign-in and consent pages, the respondent's form. */
function isPageRoute(route: string | undefined): boolean {
  return route !== undefined && /^\/(?:settings|oauth\/interaction|f)(?:\/|$)/.test(route);
}

/**
 * The authorization server's own endpoints (/oauth/*, except the sign-in pages, which are ours)
 * and its metadata: RFC 8414's path answers with the same document as OpenID discovery. Mounted
 * with @fastify/middie as oidc-provider documents for Fastify: its callback() runs in a request
 * hook, before Fastify reads the body, and reads the body itself.
 */
async function mountOAuth(app: NestFastifyApplication, config: AppConfig): Promise<void> {
  const provider = await createOAuthProvider(config, app.get(DataSource));
  app.get(OAuthProviderRef).provider = provider;
  const callback = provider.callback();
  // Its query strings and bodies are checked for text PostgreSQL cannot store first (the edge check
  // of the other routes runs after Fastify reads a body, which it never does here).
  const handle = (req: IncomingMessage, res: ServerResponse, path: string) =>
    void checkOAuthInput(req, res, path).then(
      (checked) => checked && callback(checked, res),
      () => res.destroy(), // the request broke off while its body was read
    );
  app.use((req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const url = req.url ?? '/';
    const path = pathOf(url);
    if (path === '/.well-known/oauth-authorization-server') {
      req.url = '/.well-known/openid-configuration' + url.slice(path.length);
      return handle(req, res, path);
    }
    if (
      path === '/.well-known/openid-configuration' ||
      (path.startsWith('/oauth/') && !path.startsWith('/oauth/interaction/'))
    ) {
      return handle(req, res, path);
    }
    next();
  });
}
