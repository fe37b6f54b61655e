/** The routes of the tools API: GET /api/v1, GET /api/v1/tools, POST /api/v1/tools/{name}. */
import { Controller, Get, Header, HttpCode, Post, Req, Res, UseGuards, UseInterceptors } from '@nestjs/common';
import { RouteConstraints } from '@nestjs/platform-fastify';
import { ApiExcludeEndpoint } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Public } from '../auth/public.decorator';
import { CredentialOptional } from '../auth/public.decorator';
import { IDEMPOTENCY_KEY_PRESENT } from '../idempotency/idempotency-key.constraint';
import { IdempotencyInterceptor } from '../idempotency/idempotency.interceptor';
import { CheckedToolCall, ToolAccessGuard, ToolArgumentsGuard, ToolResolveGuard } from './tool-call.guards';
import { ToolCall, ToolCallService } from './tool-call.service';
import { ToolRegistry } from './tool-registry.service';
import { notListedHint } from './tool-list';
import { jsonServedAsIs } from '../common/http/served-as-is';
import { JobsService, jobWorthy } from '../jobs/jobs.service';

/** The type Fastify gives a JSON answer it serializes. */
const JSON_TYPE = 'application/json; charset=utf-8';

@Controller('api/v1')
export class ToolsController {
  constructor(
    private readonly registry: ToolRegistry,
    private readonly calls: ToolCallService,
    private readonly jobs: JobsService,
  ) {}

  /** The caller's workspace, role and scopes, and the tools it may call. */
  @Get()
  @ApiExcludeEndpoint()
  root(@Req() req: FastifyRequest) {
    const p = req.principal!;
    return {
      workspace: p.workspace,
      role: p.role,
      scopes: p.scopes,
      credential: {
        type: p.credential.kind,
        id: p.credential.id,
        ...(p.credential.name ? { name: p.credential.name } : {}),
      },
      tools: this.registry.callableBy(p).map((t) => t.definition.name),
    };
  }

  /**
   * The tools the credential may call (every tool without one: the API's public description), and
   * `notListed` ({ count, hint }) when some are left out: how many, and what they would take. The
   * answer depends on the credential, so a cache keys it on Authorization and shares none.
   */
  @Public()
  @CredentialOptional()
  @Get('tools')
  @Header('Vary', 'Authorization')
  @Header('Cache-Control', 'private')
  @ApiExcludeEndpoint()
  list(@Req() req: FastifyRequest) {
    const p = req.principal;
    const tools = this.registry.listFor(p);
    if (!p || tools.length === this.registry.all().length) return { tools };
    const listed = new Set(tools.map((t) => t.name));
    const hidden = this.registry.all().filter((t) => !listed.has(t.definition.name));
    return {
      tools,
      notListed: {
        count: hidden.length,
        hint: notListedHint(
          p,
          hidden.map((t) => t.requirement),
        ),
      },
    };
  }

  /**
   * Runs one tool. The guards resolve it, check scope, plan and role, then the arguments (see
   * tool-call.guards.ts); IdempotencyInterceptor handles an Idempotency-Key; the answer is the
   * tool's result. A call that carries the header is routed to callWithKey (the same route, with
   * the interceptor); one without it skips Nest's interceptor machinery, whose cost every call
   * would otherwise pay (idempotency-key.constraint.ts).
   */
  @Post('tools/:name')
  @RouteConstraints(IDEMPOTENCY_KEY_PRESENT)
  @HttpCode(200)
  @ApiExcludeEndpoint()
  @UseGuards(ToolResolveGuard, ToolAccessGuard, ToolArgumentsGuard)
  @UseInterceptors(IdempotencyInterceptor)
  callWithKey(@CheckedToolCall() call: ToolCall) {
    return this.calls.run(call);
  }

  /** An answer made by servedAsIs (get_form's) is sent as its JSON text, made once, not serialized again. */
  @Post('tools/:name')
  @HttpCode(200)
  @ApiExcludeEndpoint()
  @UseGuards(ToolResolveGuard, ToolAccessGuard, ToolArgumentsGuard)
  async call(
    @CheckedToolCall() call: ToolCall,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    // Issue 49: with `Prefer: respond-async` (RFC 7240), a long call runs as a job: 202, and the
    // job (get_job polls it). Not with an Idempotency-Key (the route above): a read needs none.
    const name = call.tool.definition.name;
    const working = /\brespond-async\b/i.test(String(req.headers.prefer ?? '')) && jobWorthy(name, call.args);
    if (working) {
      const job = await this.jobs.start(call.principal, name, working, () => this.calls.run(call));
      reply.status(202).header('Preference-Applied', 'respond-async');
      return job;
    }
    const answer = await this.calls.run(call);
    const json = jsonServedAsIs(answer);
    if (json === undefined) return answer;
    reply.type(JSON_TYPE);
    return json;
  }
}
