/** GET /: the service's name, version and where to start (JSON, or a short page for a browser). */
import { Controller, Get, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Public } from '../auth/public.decorator';
import { Document, renderPage } from '../common/html';

/** package.json from src/index (ts-jest) or dist/src/index (built). */
const PACKAGE_JSON = [
  join(__dirname, '..', '..', 'package.json'),
  join(__dirname, '..', '..', '..', 'package.json'),
].find((p) => existsSync(p));
export const VERSION: string = PACKAGE_JSON
  ? (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version
  : 'unknown';

const DESCRIPTION = "A form builder's back end whose API is tools over HTTP.";

/** The page's headers: inline styles only, nothing that runs, no framing. */
const PAGE_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/** The q of the first media range of `accept` that matches `type` (exact, then the type's wildcard, then any); 0 if none. */
function quality(accept: string, type: string): number {
  const ranges = accept.split(',').map((part) => {
    const [range, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return { range: range.trim(), q: q ? Number(q.slice(2)) || 0 : 1 };
  });
  for (const want of [type, `${type.split('/')[0]}/*`, '*/*']) {
    const found = ranges.find((r) => r.range === want);
    if (found) return found.q;
  }
  return 0;
}

/** Whether the client prefers HTML to JSON (a browser does; an API client asking for JSON or anything does not). */
export function prefersHtml(accept: string | undefined): boolean {
  return !!accept && quality(accept, 'text/html') > quality(accept, 'application/json');
}

function IndexPage() {
  return (
    <Document title="Formwork">
      <main>
        <h1>Formwork</h1>
        <p>
          {DESCRIPTION} Version {VERSION}.
        </p>
        <ul>
          <li>
            <a href="/settings">Settings</a>: sign in to see your workspaces&apos; forms and results, API tokens,
            members, connected apps and webhooks.
          </li>
          <li>
            <a href="/docs">API docs</a>: every tool with its arguments, to try from the browser (the{' '}
            <a href="/openapi.json">OpenAPI document</a>).
          </li>
          <li>
            <a href="/auth.md">How to authenticate</a>: API tokens, and OAuth for apps and agents.
          </li>
        </ul>
        <p className="muted">
          Agents connect over MCP at <code>/mcp</code>; scripts call <code>{'POST /api/v1/tools/{name}'}</code>.
        </p>
      </main>
    </Document>
  );
}

/** GET /: what this service is and where to start, for a person or an agent that only knows the address. */
@Public()
@ApiExcludeController()
@Controller()
export class IndexController {
  @Get()
  index(@Req() req: FastifyRequest, @Res() res: FastifyReply) {
    res.header('Vary', 'Accept');
    if (prefersHtml(req.headers.accept))
      return res
        .status(200)
        .headers(PAGE_HEADERS)
        .type('text/html; charset=utf-8')
        .send(renderPage(<IndexPage />));
    return res.status(200).send({
      name: 'Formwork',
      description: DESCRIPTION,
      version: VERSION,
      links: {
        docs: '/docs',
        openapi: '/openapi.json',
        auth: '/auth.md',
        tools: '/api/v1/tools',
        mcp: '/mcp',
      },
    });
  }
}
