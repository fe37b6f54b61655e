/**
 * The tools over HTTP: the registry of every @Tool found at boot, the steps of a call (resolve, access,
 * arguments, run) and the routes GET /api/v1, GET /api/v1/tools and POST /api/v1/tools/{name}.
 */
import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { JobsModule } from '../jobs/jobs.module';
import { ToolAccessGuard, ToolArgumentsGuard, ToolResolveGuard } from './tool-call.guards';
import { ToolCallService } from './tool-call.service';
import { ToolRegistry } from './tool-registry.service';
import { ToolsController } from './tools.controller';

@Module({
  imports: [DiscoveryModule, IdempotencyModule, JobsModule],
  controllers: [ToolsController],
  providers: [ToolRegistry, ToolCallService, ToolResolveGuard, ToolAccessGuard, ToolArgumentsGuard],
  exports: [ToolRegistry, ToolCallService],
})
export class ToolsModule {}
