/**
 * Who may answer, how many, and when (issue 47): a form's schedule (opensAt, closesAt), its cap
 * and quotas (counted in response_limits), and its invitations. AccessService and InvitesService
 * are the one way in for responses/, respondent/ and the tools.
 */
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FormsModule } from '../forms/forms.module';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';
import { AccessService } from './access.service';
import { CreateInvitesTool } from './create-invites.tool';
import { FormInviteEntity } from './entities/form-invite.entity';
import { ResponseLimitEntity } from './entities/response-limit.entity';
import { InvitesRepository } from './invites.repository';
import { InvitesService } from './invites.service';
import { ListInvitesTool } from './list-invites.tool';
import { RevokeInvitesTool } from './revoke-invites.tool';

@Module({
  imports: [TypeOrmModule.forFeature([FormInviteEntity, ResponseLimitEntity]), FormsModule, WebhookOutboxModule],
  providers: [AccessService, InvitesRepository, InvitesService, CreateInvitesTool, ListInvitesTool, RevokeInvitesTool],
  exports: [AccessService, InvitesService],
})
export class AccessModule {}
