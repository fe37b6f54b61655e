/** The MCP connector at /mcp: the tool registry and tool call steps of ToolsModule, over MCP. */
import { Module } from '@nestjs/common';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { JobsModule } from '../jobs/jobs.module';
import { ToolsModule } from '../tools/tools.module';
import { McpController } from './mcp.controller';
import { McpService } from './mcp.service';

@Module({
  imports: [ToolsModule, IdempotencyModule, JobsModule],
  controllers: [McpController],
  providers: [McpService],
})
export class McpModule {}
