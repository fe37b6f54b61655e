/** The respondent's page at /f/{publicId}: a published form as people see it, answer and submit it. */
import { Module } from '@nestjs/common';
import { FormsModule } from '../forms/forms.module';
import { AccessModule } from '../access/access.module';
import { ResponsesModule } from '../responses/responses.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { UploadsModule } from '../uploads/uploads.module';
import { ClientKeys } from './client-key';
import { PageStateSigner } from './page-state';
import { RespondentController } from './respondent.controller';
import { FrozenPages } from './frozen-pages';
import { ResumeEmailController } from './resume-email.controller';
import { EmailModule } from '../email/email.module';

@Module({
  imports: [FormsModule, AccessModule, ResponsesModule, WorkspacesModule, UploadsModule, EmailModule],
  controllers: [RespondentController, ResumeEmailController],
  // The pages drawn once per form version (issue 52), one set per instance.
  providers: [PageStateSigner, ClientKeys, { provide: FrozenPages, useFactory: () => new FrozenPages() }],
})
export class RespondentModule {}
