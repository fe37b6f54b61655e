/** How request bodies are read: size limits, JSON parsing, and the routes that take form posts. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parse as parseQueryString } from 'node:querystring';
import { ApiError } from '../errors/api-error';
import { payloadTooLarge } from '../errors/request-checks';

/** JSON bodies (tool arguments, the respondent page's JSON): 1 MB. */
export const JSON_BODY_LIMIT = 1024 * 1024;
/**
 * The tool routes (POST /api/v1/tools/{name}, POST /mcp) read bodies up to this; each tool call then
 * takes JSON_BODY_LIMIT unless its tool declares more (create_upload, whose contentBase64 carries
 * a file of up to 5 MB: 6.67 MB as base64). See ToolCallService.checkBodySize.
 */
export const TOOL_ROUTE_BODY_LIMIT = 7 * 1024 * 1024;
const TOOL_ROUTES = new Set(['/api/v1/tools/:name', '/mcp']);
/** The largest form post any page takes (the respondent page); a page may take less (see FormPost). */
export const FORM_BODY_LIMIT = 200 * 1024;

/**
 * A route that takes browser form posts (application/x-www-form-urlencoded) says how large they may
 * be, in its Fastify route config (`@RouteConfig(formPost(...))`). Routes without it get the
 * urlencoded body as text, like any body that is not JSON, and refuse it themselves.
 */
export interface FormPostConfig {
  formPost: { bytes: number; fields: number };
}

export function formPost(bytes: number, fields: number): FormPostConfig {
  return { formPost: { bytes, fields } };
}

/**
 * A route that takes multipart/form-data (the respondent page's file questions) says so in its
 * route config; it gets the body unread, as a stream, and reads it itself (files are streamed to
 * storage, never held in memory). Elsewhere a multipart body is read like any other (1 MB).
 */
export interface MultipartConfig {
  multipart: true;
}

export function isMultipart(req: FastifyRequest): boolean {
  return mediaType(req.headers['content-type']) === 'multipart/form-data';
}

/** application/json and application/<anything>+json, with or without parameters (Fastify matches the whole header). */
const JSON_TYPE = /^application\/(?:[a-z0-9!#$&^_.-]+\+)?json\s*(?:;|$)/i;

/** Whether the request says its body is JSON (the media type alone, parameters ignored). */
export function isJsonRequest(req: FastifyRequest): boolean {
  return JSON_TYPE.test(mediaType(req.headers['content-type']));
}

export function isFormPost(req: FastifyRequest): boolean {
  return mediaType(req.headers['content-type']) === 'application/x-www-form-urlencoded';
}

function mediaType(header: string | undefined): string {
  if (!header) return '';
  const semicolon = header.indexOf(';');
  return (semicolon < 0 ? header : header.slice(0, semicolon)).trim().toLowerCase();
}

/**
 * Reads request bodies without interpreting them, so that each route reports a bad body at its own
 * step (a tool call: after authentication and the tool checks, in the order the design fixes):
 *  - JSON (application/json, application/*+json): the text, up to 1 MB (7 MB on the tool routes,
 *    where each tool says what it takes); `parseJson` parses it;
 *  - form posts: the fields (repeated names as lists), on routes that declare FormPostConfig; the
 *    text elsewhere;
 *  - any other type: the bytes, up to 1 MB (the route answers 415).
 * Too large a body is refused at once (413). (A compressed one was refused before: request-checks.ts.)
 * Fastify's own JSON and text parsers are removed: nothing is parsed before the route asks.
 */
export function registerBodyParsers(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (TOOL_ROUTES.has(route.url)) route.bodyLimit = TOOL_ROUTE_BODY_LIMIT;
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_TYPE, { parseAs: 'string', bodyLimit: JSON_BODY_LIMIT }, (req, text, done) => {
    done(refusedCharset(req) ?? null, text);
  });
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
    (req, text, done) => {
      const refused = refusedCharset(req);
      if (refused) return done(refused, undefined);
      const limits = (req.routeOptions.config as Partial<FormPostConfig>).formPost;
      if (!limits) return done(null, text);
      const body = text as string;
      if (Buffer.byteLength(body) > limits.bytes) return done(payloadTooLarge(limits.bytes), undefined);
      // Counted before parsing, as body-parser does: querystring would silently drop the rest.
      let fields = body.length > 0 ? 1 : 0;
      for (let i = body.indexOf('&'); i >= 0; i = body.indexOf('&', i + 1)) fields++;
      if (fields > limits.fields) {
        return done(
          new ApiError('payload_too_large', {
            message: `The form post has too many fields (this page takes ${limits.fields}).`,
            hint: 'Send only the fields of the form.',
          }),
          undefined,
        );
      }
      done(null, parseQueryString(body));
    },
  );
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: JSON_BODY_LIMIT }, (_req, bytes, done) =>
    done(null, bytes),
  );
  app.addContentTypeParser('multipart/form-data', (req, payload, done) => {
    if ((req.routeOptions.config as Partial<MultipartConfig>).multipart) return done(null, payload);
    // As the catch-all above: the bytes, up to 1 MB.
    const chunks: Buffer[] = [];
    let size = 0;
    payload.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= JSON_BODY_LIMIT) chunks.push(chunk);
    });
    payload.on('error', (err) => done(err, undefined));
    payload.on('end', () =>
      size > JSON_BODY_LIMIT ? done(payloadTooLarge(JSON_BODY_LIMIT), undefined) : done(null, Buffer.concat(chunks)),
    );
  });
}

/** The body as parsed by the route: JSON text to a value; an empty body is undefined. */
export function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError('invalid_arguments', {
      message: 'The request body is not valid JSON.',
      hint: 'Send a JSON object, e.g. {} for a tool without arguments.',
      details: [{ path: '', message: 'malformed JSON' }],
    });
  }
}

/** The body limit that applies to a request (for the 413 answer). */
export function bodyLimitOf(req: FastifyRequest): number {
  const form = (req.routeOptions.config as Partial<FormPostConfig> | undefined)?.formPost;
  if (isFormPost(req)) return form?.bytes ?? FORM_BODY_LIMIT;
  return Math.max(JSON_BODY_LIMIT, req.routeOptions.bodyLimit ?? 0);
}

/** JSON and form posts are read as UTF-8: a body declared in another charset is refused, not misread. */
function refusedCharset(req: FastifyRequest): ApiError | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(req.headers['content-type'] ?? '');
  if (!match || /^utf-?8$/i.test(match[1])) return undefined;
  return new ApiError('unsupported_media_type', {
    message: `The body charset ${match[1]} is not supported.`,
    hint: 'Send UTF-8 (or leave the charset out).',
  });
}
