import { Logger, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { SwaggerModule } from '@nestjs/swagger';
import { randomUUID } from 'node:crypto';
import express, { NextFunction, Request, Response } from 'express';
import { AppModule } from './app.module';
import { ApiError } from './common/errors/api-error';
import { ApiExceptionFilter, mapBodyParserError } from './common/errors/api-exception.filter';
import { checkContentEncoding } from './common/errors/request-checks';
import { runInRequestContext } from './common/request-context';
import { AppConfig } from './config/config';
import { createOAuthProvider, OAuthProviderRef } from './oauth/oauth-provider';
import { DataSource } from 'typeorm';
import { ipRateLimit } from './rate-limit/ip-rate-limit.middleware';
import { RateLimitService } from './rate-limit/rate-limit.service';
import { buildOpenApiDocument, docsContentSecurityPolicy } from './tools/openapi';
import { nestingDepthDetails } from './tools/schema-validator';
import { apiV1VersionHeaders, deprecationHeaders } from './versioning/version-headers';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * CORS for browser callers. Credentials travel in the Authorization header, never in cookies, so
 * any origin may call; the exposed headers are the ones a client needs to read.
 */
const CORS = {
  origin: '*',
  methods: ['GET', 'HEAD', 'POST'],
  allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
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
  ],
  maxAge: 86_400,
};

/**
 * Builds the HTTP application exactly as it runs in production; tests call this too, so they
 * exercise the same middleware, filter and guards. The order of the Express steps matters:
 * request id (and the log context), CORS (a preflight spends no budget), version headers (on
 * every /api/v1 answer, a 429 included), the IP budget (before any parsing), then the JSON body.
 */
export interface CreateAppOptions {
  /**
   * Mount the OAuth authorization server (default true). oidc-provider is ESM-only, which jest's
   * CommonJS runtime cannot load: the in-process test app runs without it, and the OAuth flow is
   * tested against the built service (test/oauth, node --test).
   */
  oauth?: boolean;
}

export async function createApp(
  config: AppConfig,
  databaseUrl: string,
  logger?: LoggerService | false,
  options: CreateAppOptions = {},
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, databaseUrl), {
    bodyParser: false,
    abortOnError: false, // throw to the caller (main prints one line; tests see the error)
    logger: logger ?? undefined,
  });
  app.set('trust proxy', config.trustProxy);
  app.set('x-powered-by', false);
  app.set('etag', false);

  const accessLog = new Logger('Http');
  const logRequests = logger !== false && (config.logLevel === 'info' || config.logLevel === 'debug');
  app.use((req: Request, res: Response, next: NextFunction) => {
    // On every answer, errors and pages included: browsers must take each as the type it says.
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const incoming = req.headers['x-request-id'];
    req.id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', req.id);
    const context = { requestId: req.id };
    if (logRequests) {
      const started = process.hrtime.bigint();
      // One line per request; the path without its query string, which could hold anything.
      res.on('finish', () =>
        runInRequestContext(context, () =>
          accessLog.log({
            msg: 'request',
            method: req.method,
            path: req.path,
            status: res.statusCode,
            ms: Number((process.hrtime.bigint() - started) / 10_000n) / 100,
            ip: req.ip,
            ...(req.principal ? { credential: req.principal.credential.id } : {}),
          }),
        ),
      );
    }
    runInRequestContext(context, next);
  });
  app.enableCors(CORS);
  if (Object.keys(deprecationHeaders(config)).length > 0) app.use('/api/v1', apiV1VersionHeaders(config));
  app.use(ipRateLimit(app.get(RateLimitService)));
  // Compressed bodies are refused on every route (the OAuth server's included) before any parser reads them.
  app.use((req: Request, _res: Response, next: NextFunction) => next(checkContentEncoding(req.headers)));
  if (options.oauth !== false) await mountOAuth(app, config);
  const json = express.json({ limit: config.jsonBodyLimit, strict: true, type: ['application/json', 'application/*+json'] });
  app.use((req: Request, res: Response, next: NextFunction) =>
    json(req, res, (err?: unknown) => {
      // The body arrives in the socket's async context: serve the rest of the request in its own again.
      runInRequestContext({ requestId: req.id }, () => {
        let error = err ? (mapBodyParserError(err) ?? err) : undefined;
        const tooDeep = error ? [] : nestingDepthDetails(req.body);
        if (tooDeep.length) {
          error = new ApiError('invalid_arguments', {
            message: 'The arguments nest too deeply.',
            hint: 'Send flatter JSON: tool arguments need only a few levels of objects and arrays.',
            details: tooDeep,
          });
        }
        // Malformed JSON is an argument error: reported after authentication and tool checks,
        // in the order the design fixes. Too large a body is refused at once.
        if (error instanceof ApiError && error.code === 'invalid_arguments') {
          req.bodyError = error;
          return next();
        }
        next(error);
      });
    }),
  );

  const expressApp = app.getHttpAdapter().getInstance() as express.Express;
  app.useGlobalFilters(new ApiExceptionFilter((path) => allowedMethods(expressApp, path)));

  // Registered before init (Nest adds its 404 handler at init), built on first use (the tool
  // registry is filled at init).
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  const openApi = () => (document ??= buildOpenApiDocument(app, config));
  expressApp.get('/openapi.json', (_req: Request, res: Response) => {
    res.json(openApi());
  });
  // Swagger UI runs only its own scripts: the page and its assets get a CSP of their own.
  const docsCsp = docsContentSecurityPolicy(config);
  app.use('/docs', (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', docsCsp);
    next();
  });
  SwaggerModule.setup('docs', app, openApi, {
    jsonDocumentUrl: '/docs/openapi.json',
    yamlDocumentUrl: '/docs/openapi.yaml',
    customSiteTitle: 'Formwork API',
    // No badge from validator.swagger.io: it would send the document's address to a third party.
    swaggerOptions: { validatorUrl: null },
  });
  await app.init();
  return app;
}

/**
 * The authorization server's own endpoints (/oauth/*, except the sign-in pages, which are ours)
 * and its metadata: RFC 8414's path answers with the same document as OpenID discovery.
 * Mounted before the JSON parser: oidc-provider reads its bodies itself.
 */
async function mountOAuth(app: NestExpressApplication, config: AppConfig): Promise<void> {
  const provider = await createOAuthProvider(config, app.get(DataSource));
  app.get(OAuthProviderRef).provider = provider;
  const handle = provider.callback();
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (req.path === '/.well-known/oauth-authorization-server') {
      req.url = '/.well-known/openid-configuration';
      return handle(req, res);
    }
    if (req.path === '/.well-known/openid-configuration' || (req.path.startsWith('/oauth/') && !req.path.startsWith('/oauth/interaction/'))) {
      return handle(req, res);
    }
    next();
  });
}

/** The methods Express has routes for on a path (for 405 and its Allow header). */
function allowedMethods(app: express.Express, path: string): string[] {
  const methods = new Set<string>();
  const stack = (app as unknown as { router?: { stack: RouterLayer[] } }).router?.stack ?? [];
  for (const layer of stack) {
    if (!layer.route || !layer.match(path)) continue;
    for (const [method, on] of Object.entries(layer.route.methods)) if (on && method !== '_all') methods.add(method.toUpperCase());
  }
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods];
}

interface RouterLayer {
  route?: { methods: Record<string, boolean> };
  match(path: string): boolean;
}

