/** GET /: the service's name, version and where to start. */
import { Controller, Get } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Public } from '../auth/public.decorator';

/** package.json from src/index (ts-jest) or dist/src/index (built). */
const PACKAGE_JSON = [
  join(__dirname, '..', '..', 'package.json'),
  join(__dirname, '..', '..', '..', 'package.json'),
].find((p) => existsSync(p));
export const VERSION: string = PACKAGE_JSON
  ? (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version
  : 'unknown';

/** GET /: what this service is and where to start, for a person or an agent that only knows the address. */
@Public()
@ApiExcludeController()
@Controller()
export class IndexController {
  @Get()
  index() {
    return {
      name: 'Formwork',
      description: "A form builder's back end whose API is tools over HTTP.",
      version: VERSION,
      links: {
        docs: '/docs',
        openapi: '/openapi.json',
        auth: '/auth.md',
        tools: '/api/v1/tools',
        mcp: '/mcp',
      },
    };
  }
}
