/**
 * The settings pages, server-rendered: sign-in, account, and per workspace its members, API tokens,
 * connected apps, webhooks, audit trail, plan and embed origins.
 */
import { Module } from '@nestjs/common';
import { TokensModule } from '../tokens/tokens.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { ExportsModule } from '../exports/exports.module';
import { FormsModule } from '../forms/forms.module';
import { ResponsesModule } from '../responses/responses.module';
import { FormsResultsController } from '../results/forms.controller';
import { ResponsesResultsController } from '../results/responses.controller';
import { ResultsService } from '../results/results.service';
import { SessionsModule } from './sessions.module';
import { AccountController } from './account.controller';
import { AppsController } from './apps.controller';
import { AuditController } from './audit.controller';
import { ConfirmController, Confirmations } from './confirm.controller';
import { MembersController } from './members.controller';
import { PlanController } from './plan.controller';
import { SettingsHttp } from './settings-http';
import { SignInController } from './sign-in.controller';
import { TokensController } from './tokens.controller';
import { WebhooksController } from './webhooks.controller';
import { SettingsRepository } from './settings.repository';
import { UploadsModule } from '../uploads/uploads.module';
import { EmailModule } from '../email/email.module';
import { UnsubscribeController } from '../email/unsubscribe.controller';
import { EmailController } from './email.controller';
import { SettingsService } from './settings.service';
import { WebhooksPageService } from './webhooks-page.service';

/**
 * The workspace settings pages: one controller per section, the plumbing they share (SettingsHttp),
 * the one confirmation step of destructive actions (ConfirmController, Confirmations), the service
 * (the rules of each action) and repository.
 */
@Module({
  imports: [
    WorkspacesModule,
    TokensModule,
    SessionsModule,
    WebhooksModule,
    FormsModule,
    ResponsesModule,
    ExportsModule,
    UploadsModule,
    EmailModule,
  ],
  controllers: [
    SignInController,
    AccountController,
    TokensController,
    MembersController,
    AppsController,
    WebhooksController,
    AuditController,
    PlanController,
    EmailController,
    UnsubscribeController,
    // The results pages (issue 27, src/results): forms, a form's summary, responses, share.
    FormsResultsController,
    ResponsesResultsController,
    // Last: its generic path (:section/:id/:action) answers only what the sections' own routes do not.
    ConfirmController,
  ],
  providers: [SettingsService, SettingsRepository, WebhooksPageService, SettingsHttp, Confirmations, ResultsService],
})
export class SettingsModule {}
