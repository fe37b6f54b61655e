/**
 * Who may answer, how many, and when (issue 47): a form's schedule (opensAt, closesAt), its cap
 * and quotas (counted in response_limits), its invitations, and the spam defence of its page.
 * AccessService and InvitesService are the one way in for responses/, respondent/ and the tools;
 * SpamGate judges page posts, SpamResponses keeps those judged as spam.
 */
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FormsModule } from '../forms/forms.module';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';
import { AccessService } from './access.service';
import { CreateInvitesTool } from './create-invites.tool';
import { FormInviteEntity } from './entities/form-invite.entity';
import { ResponseLimitEntity } from './entities/response-limit.entity';
import { SpamResponseEntity } from './entities/spam-response.entity';
import { InvitesRepository } from './invites.repository';
import { InvitesService } from './invites.service';
import { ListInvitesTool } from './list-invites.tool';
import { RevokeInvitesTool } from './revoke-invites.tool';
import { SpamGate } from './spam/spam-gate.service';
import { SpamResponses } from './spam/spam-responses';

@Module({
  imports: [
    TypeOrmModule.forFeature([FormInviteEntity, ResponseLimitEntity, SpamResponseEntity]),
    FormsModule,
    WebhookOutboxModule,
    RateLimitModule,
  ],
  providers: [
    AccessService,
    InvitesRepository,
    InvitesService,
    CreateInvitesTool,
    ListInvitesTool,
    RevokeInvitesTool,
    SpamGate,
    SpamResponses,
  ],
  exports: [AccessService, InvitesService, SpamGate, SpamResponses],
})
export class AccessModule {}
