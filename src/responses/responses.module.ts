/**
 * Responses to forms: ResponsesService (storing and checking answers, listing, summaries), the sequencer
 * that numbers them, and the response tools.
 */
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ResponseEntity } from './entities/response.entity';
import { PartialPageCountEntity, PartialResponseEntity, ResumeMoveEntity } from './entities/partial-response.entity';
import { PartialResponsesRepository } from './partial-responses.repository';
import { PartialResponsesService } from './partial-responses.service';
import {
  AnswerCountEntity,
  BlockStatsEntity,
  HiddenCountEntity,
  ResponseBucketEntity,
  ResponseCounterEntity,
  ResponseSegmentEntity,
  SegmentAnswerCountEntity,
  SegmentBlockStatsEntity,
} from './entities/response-stats.entity';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { FormsModule } from '../forms/forms.module';
import { AccessModule } from '../access/access.module';
import { UploadsModule } from '../uploads/uploads.module';
import { FilesModule } from '../files/files.module';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';
import { CheckResponseTool } from './check-response.tool';
import { CreateResponseTool } from './create-response.tool';
import { DeleteResponseTool } from './delete-response.tool';
import { GetResponseTool } from './get-response.tool';
import { ListResponsesTool } from './list-responses.tool';
import { LongReads } from './long-reads';
import { ResponseInsertBatcher } from './response-insert-batcher';
import { ResponseSequencer } from './response-sequencer';
import { ResponsesService } from './responses.service';
import { SummarizeResponsesTool } from '../summaries/summarize-responses.tool';
import { UpdateResponseTool } from './update-response.tool';

@Module({
  imports: [
    TypeOrmModule.forFeature([
      ResponseEntity,
      ResponseCounterEntity,
      ResponseBucketEntity,
      BlockStatsEntity,
      AnswerCountEntity,
      HiddenCountEntity,
      ResponseSegmentEntity,
      SegmentBlockStatsEntity,
      SegmentAnswerCountEntity,
      PartialResponseEntity,
      ResumeMoveEntity,
      PartialPageCountEntity,
    ]),
    FormsModule,
    AccessModule,
    IdempotencyModule,
    WebhookOutboxModule,
    UploadsModule,
    FilesModule,
  ],
  providers: [
    ResponsesService,
    PartialResponsesService,
    PartialResponsesRepository,
    ResponseSequencer,
    LongReads,
    ResponseInsertBatcher,
    ListResponsesTool,
    GetResponseTool,
    SummarizeResponsesTool,
    CreateResponseTool,
    CheckResponseTool,
    DeleteResponseTool,
    UpdateResponseTool,
  ],
  exports: [ResponsesService, PartialResponsesService, ResponseSequencer, LongReads],
})
export class ResponsesModule {}
