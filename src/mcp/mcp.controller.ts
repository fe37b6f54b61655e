import { Controller, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { McpService } from './mcp.service';

/**
 * POST /mcp, MCP's Streamable HTTP transport. It runs after the global guards (authentication,
 * the credential's budget) like every route; the Origin check ran earlier, in a request hook
 * (mcp-origin.hook.ts). Only POST is served: a stateless server opens no stream, so GET and DELETE
 * answer 405 with Allow, as the transport prescribes.
 */
@ApiExcludeController()
@Controller('mcp')
export class McpController {
  constructor(private readonly mcp: McpService) {}

  @Post()
  async post(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const answer = await this.mcp.handle(req);
    reply.status(answer.status).headers(answer.headers).send(answer.body);
  }
}
