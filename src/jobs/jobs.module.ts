/** Long tool calls as background jobs (MCP tasks, REST 202): JobsService and get_job. */
import { Module } from '@nestjs/common';
import { ResponsesModule } from '../responses/responses.module';
import { GetJobTool } from './get-job.tool';
import { JobsService } from './jobs.service';

@Module({
  imports: [ResponsesModule],
  providers: [JobsService, GetJobTool],
  exports: [JobsService],
})
export class JobsModule {}
