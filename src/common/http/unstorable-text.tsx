/**
 * Text PostgreSQL cannot store (NUL U+0000, a lone UTF-16 surrogate), refused where input enters:
 * one request hook for every route, instead of a check per route that a new route could forget
 * (one forgotten became a 500 and an error line: the settings audit filter, the webhook form...).
 */
import type { FastifyReply, FastifyRequest, preValidationHookHandler } from 'fastify';
import { ApiError, ErrorDetail } from '../errors/api-error';
import { sendError } from '../errors/api-exception.filter';
import { Document, renderPage } from '../html';
import { nestingDepthDetails, unstorableTextDetails } from '../validation/schema-validator';
import { isJsonRequest } from './body';

/**
 * A JSON text can hold unstorable text only through an escape (a raw NUL is not valid JSON, and
 * UTF-8 decoding never yields a lone surrogate): \u0000 or a surrogate escape \uD800-\uDFFF. Texts
 * without one (nearly all) are not parsed here; one with one is parsed to find where it is (an
 * escaped backslash before "u0000" makes a false alarm, which the parse settles).
 */
const SUSPECT_JSON_ESCAPE = /\\u(?:0000|d[89a-f])/i;

/** Where a request holds text that cannot be stored: which part, and the details (JSON Pointers within that part). */
export interface UnstorableText {
  part: 'path' | 'query' | 'body';
  details: ErrorDetail[];
}

/**
 * The first part of a request (path parameters, query string, body) that holds unstorable text,
 * in strings or in names, at any depth; undefined when there is none. A JSON body is read as JSON
 * (one that does not parse is left to its route, which reports it); a form post as its fields;
 * another text body as text; bytes are not text.
 */
export function findUnstorableText(
  req: FastifyRequest,
  skip: readonly UnstorableText['part'][] = [],
): UnstorableText | undefined {
  const parts: Array<[UnstorableText['part'], unknown]> = [
    ['path', req.params],
    ['query', req.query],
    ['body', skip.includes('body') ? undefined : bodyValue(req)],
  ];
  for (const [part, value] of parts) {
    // Depth is bounded first: the walk is recursive. Deeper input is its route's to refuse.
    if (value === undefined || skip.includes(part) || nestingDepthDetails(value).length > 0) continue;
    const details = unstorableTextDetails(value);
    if (details.length > 0) return { part, details };
  }
  return undefined;
}

function bodyValue(req: FastifyRequest): unknown {
  const body = req.body;
  if (typeof body !== 'string') return Buffer.isBuffer(body) ? undefined : body;
  if (!isJsonRequest(req)) return body;
  if (!SUSPECT_JSON_ESCAPE.test(body)) return undefined;
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** The JSON envelope's error for unstorable text (400 invalid_arguments). */
export function unstorableTextError(found: UnstorableText): ApiError {
  const where = { path: 'the request path', query: 'the query string', body: 'the request body' }[found.part];
  return new ApiError('invalid_arguments', {
    message: `Some text in ${where} cannot be stored: it holds a NUL character (\\u0000) or a lone surrogate.`,
    hint:
      found.part === 'body'
        ? 'Remove NUL characters and lone surrogates from the strings named in details (JSON Pointers into the body).'
        : `Remove NUL characters (%00) and lone surrogates from ${where}.`,
    details: found.part === 'body' ? found.details : detailsOutsideBody(found),
  });
}

/** For the path and query, a detail names the parameter (a JSON Pointer would point into the body). */
function detailsOutsideBody(found: UnstorableText): ErrorDetail[] {
  return found.details.map((d) => ({
    path: '',
    message: `the ${found.part === 'query' ? 'query' : 'path'} parameter ${JSON.stringify(d.path.split('/')[1] ?? '')} ${d.message.replace(/^the name /, 'has a name that ')}`,
  }));
}

/** The headers of the error page: nothing loads or runs in it, no site frames it, nothing caches it. */
const PAGE_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

/** The HTML answer for a browser's page (settings, sign-in, a respondent's form post). */
export function unstorableTextPage(found: UnstorableText): string {
  const where = { path: 'the address', query: 'the address', body: 'the form' }[found.part];
  return renderPage(
    <Document title="Request refused">
      <main>
        <h1>Request refused</h1>
        <p>
          Some text in {where} cannot be stored: it holds a NUL character or a broken character (a lone surrogate),
          which no person types.
        </p>
        <p>Go back, remove it and try again.</p>
      </main>
    </Document>,
  );
}

export interface UnstorableTextOptions {
  /**
   * The parts of their input that routes (as Fastify names them) check themselves, at their own
   * step and in their own words: the tool calls check their arguments after authentication and the
   * tool and access checks (ToolCallService.checkArguments), in the order the design fixes, and read
   * no query string; the respondent's form checks its public id (a URL that cannot be a form is a
   * 404) and its answers as create_response does (blocks.ts), so a respondent sees the form again
   * with a message at the field rather than an error page. Any part not listed is checked here.
   */
  checkedByRoute: Readonly<Record<string, readonly UnstorableText['part'][]>>;
  /** Whether a request is a browser's page request, answered with an HTML page rather than the JSON envelope. */
  isPage: (req: FastifyRequest) => boolean;
}

/**
 * The one check, as a preValidation hook: it runs once the route is known and the body read,
 * before any guard or handler, on every route and every part of the input but those a route checks
 * itself (UnstorableTextOptions.checkedByRoute). A refusal is a 400 in the surface's own format: the JSON envelope (invalid_arguments, details naming where), or an
 * HTML page. (The OAuth server's endpoints read their own bodies, before Fastify: oauth/unstorable-input.ts
 * checks those with the same unstorableTextDetails.)
 */
export function refuseUnstorableText(options: UnstorableTextOptions): preValidationHookHandler {
  return (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const route = req.routeOptions.url;
    if (route === undefined) return done();
    const skip = Object.hasOwn(options.checkedByRoute, route) ? options.checkedByRoute[route] : [];
    if (skip.length === 3) return done(); // all of path, query and body
    const found = findUnstorableText(req, skip);
    if (!found) return done();
    if (options.isPage(req)) {
      reply.status(400).headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(unstorableTextPage(found));
    } else {
      sendError(reply, unstorableTextError(found), req.id);
    }
  };
}
