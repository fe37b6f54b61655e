/** Long tool calls as background jobs (MCP tasks, REST 202): JobsService and get_job. */
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ResponsesModule } from '../responses/responses.module';
import { JobEntity } from './entities/job.entity';
import { GetJobTool } from './get-job.tool';
import { JobsService } from './jobs.service';

@Module({
  imports: [TypeOrmModule.forFeature([JobEntity]), ResponsesModule],
  providers: [JobsService, GetJobTool],
  exports: [JobsService],
})
export class JobsModule {}
