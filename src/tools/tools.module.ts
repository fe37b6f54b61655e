import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AccessGuard } from '../common/access/access.guard';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { ToolRegistry } from './tool-registry.service';
import { ToolResolveGuard } from './tool-resolve.guard';
import { ToolsController } from './tools.controller';

@Module({
  imports: [DiscoveryModule, IdempotencyModule],
  controllers: [ToolsController],
  providers: [ToolRegistry, ToolResolveGuard, AccessGuard],
  exports: [ToolRegistry],
})
export class ToolsModule {}
