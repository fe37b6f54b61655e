import { Controller, Get, Param, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiExcludeEndpoint } from '@nestjs/swagger';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { isJsonRequest, parseJson } from '../common/http/body';
import { Public } from '../auth/public.decorator';
import { AccessGuard } from '../common/access/access.guard';
import { mayCall } from '../common/access/access';
import { ApiError } from '../common/errors/api-error';
import { IdempotencyService } from '../idempotency/idempotency.service';
import { toDetails, unstorableTextDetails } from './schema-validator';
import { ToolRegistry } from './tool-registry.service';
import { ToolResolveGuard } from './tool-resolve.guard';

@Controller('api/v1')
export class ToolsController {
  constructor(
    private readonly registry: ToolRegistry,
    private readonly idempotency: IdempotencyService,
  ) {}

  /** The caller's workspace, role and scopes, and the tools it may call. */
  @Get()
  @ApiExcludeEndpoint()
  root(@Req() req: Request) {
    const p = req.principal!;
    return {
      workspace: p.workspace,
      role: p.role,
      scopes: p.scopes,
      credential: { type: p.credential.kind, id: p.credential.id, ...(p.credential.name ? { name: p.credential.name } : {}) },
      tools: this.registry
        .all()
        .filter((t) => mayCall(p, t.requirement))
        .map((t) => t.definition.name),
    };
  }

  @Public()
  @Get('tools')
  @ApiExcludeEndpoint()
  list() {
    return { tools: this.registry.describe() };
  }

  /**
   * Runs one tool. Guards have already resolved it and checked scope, plan and role; then come the
   * arguments, then the Idempotency-Key (a retry with the same key and arguments replays the first
   * answer instead of running the tool again).
   */
  @Post('tools/:name')
  @ApiExcludeEndpoint()
  @UseGuards(ToolResolveGuard, AccessGuard)
  async call(@Param('name') name: string, @Req() req: Request, @Res() res: Response) {
    const tool = this.registry.get(name)!;
    const input = argumentsOf(req);
    const unstorable = unstorableTextDetails(input);
    if (unstorable.length) {
      throw new ApiError('invalid_arguments', { message: 'Some text in the arguments cannot be stored.', hint: 'Remove NUL characters (\\u0000) and lone surrogates from the strings named in details.', details: unstorable });
    }
    if (!tool.validate(input)) {
      throw new ApiError('invalid_arguments', {
        message: `The arguments do not match the input schema of ${name}.`,
        details: toDetails(tool.validate.errors),
      });
    }
    const principal = req.principal!;
    const run = () => tool.handler.run(input as never, { principal, requestId: req.id });
    const key = IdempotencyService.parseKey(req.headers['idempotency-key']);
    if (key === undefined) {
      res.status(200).send(await run());
      return;
    }
    const outcome = await this.idempotency.run({ principal, tool: name, write: tool.definition.write, key, args: input, requestId: req.id }, run);
    res.headers(outcome.headers);
    if (outcome.replayed) res.header('Idempotency-Replayed', 'true');
    res.status(outcome.status).type('application/json; charset=utf-8').send(outcome.body);
  }
}

/** The tool's arguments: the JSON body, or {} for an empty one. A non-JSON body is refused. */
function argumentsOf(req: Request): unknown {
  if (req.body === undefined) return {};
  if (!isJsonRequest(req)) {
    throw new ApiError('unsupported_media_type', {
      message: `Tool arguments must be sent as JSON, not ${req.headers['content-type'] ?? 'an untyped body'}.`,
    });
  }
  const value = parseJson(req.body as string);
  return value === undefined ? {} : value;
}
