/** Forms and their blocks: FormsService (the rules of editing, publishing and closing a form) and the form tools. */
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { BlockEntity } from './entities/block.entity';
import { FormEntity } from './entities/form.entity';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { UploadsModule } from '../uploads/uploads.module';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';
import { CloseFormTool } from './close-form.tool';
import { CreateFormTool } from './create-form.tool';
import { DeleteFormTool } from './delete-form.tool';
import { FormsRepository } from './forms.repository';
import { FormVersionReads } from './form-version-reads';
import { FormsService } from './forms.service';
import { SetTranslationTool } from './translations/set-translation.tool';
import { GetFormTool } from './get-form.tool';
import { ListFormsTool } from './list-forms.tool';
import { PublishFormTool } from './publish-form.tool';
import { UpdateFormTool } from './update-form.tool';
import { DuplicateFormTool } from './duplicate-form.tool';

/** Forms and their blocks: the service, its repository and the form tools. Answers are reached through FormAnswers. */
@Module({
  imports: [TypeOrmModule.forFeature([FormEntity, BlockEntity]), IdempotencyModule, WebhookOutboxModule, UploadsModule],
  providers: [
    FormsService,
    FormsRepository,
    FormVersionReads,
    ListFormsTool,
    GetFormTool,
    CreateFormTool,
    UpdateFormTool,
    DuplicateFormTool,
    PublishFormTool,
    CloseFormTool,
    DeleteFormTool,
    SetTranslationTool,
  ],
  exports: [FormsService],
})
export class FormsModule {}
