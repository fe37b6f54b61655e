/** Forms and their blocks: FormsService (the rules of editing, publishing and closing a form) and the form tools. */
import { Module } from '@nestjs/common';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';
import { CloseFormTool } from './close-form.tool';
import { CreateFormTool } from './create-form.tool';
import { DeleteFormTool } from './delete-form.tool';
import { FormsService } from './forms.service';
import { GetFormTool } from './get-form.tool';
import { ListFormsTool } from './list-forms.tool';
import { PublishFormTool } from './publish-form.tool';
import { UpdateFormTool } from './update-form.tool';

@Module({
  imports: [IdempotencyModule, WebhookOutboxModule],
  providers: [
    FormsService,
    ListFormsTool,
    GetFormTool,
    CreateFormTool,
    UpdateFormTool,
    PublishFormTool,
    CloseFormTool,
    DeleteFormTool,
  ],
  exports: [FormsService],
})
export class FormsModule {}
