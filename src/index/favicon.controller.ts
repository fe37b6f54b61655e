/** GET /favicon.ico: the service's icon, so browsers showing its pages get one instead of a 404. */
import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../auth/public.decorator';

/** A blue rounded square with a white "F": small enough to send with every first page view. */
export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">' +
  '<rect width="32" height="32" rx="6" fill="#2b59c3"/>' +
  '<path d="M10 7h13v4h-8.5v4H21v4h-6.5v6H10z" fill="#fff"/></svg>';

/**
 * Browsers ask every site for /favicon.ico; the pages also link it from their layout. It is an SVG
 * (every current browser takes one under that name when the type says so), cached for a day.
 */
@Public()
@ApiExcludeController()
@Controller()
export class FaviconController {
  @Get('favicon.ico')
  @Header('Content-Type', 'image/svg+xml')
  @Header('Cache-Control', 'public, max-age=86400')
  favicon(): string {
    return FAVICON_SVG;
  }
}
