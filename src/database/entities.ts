import { AuditEventEntity } from '../audit/entities/audit-event.entity';
import { BlockEntity } from '../forms/entities/block.entity';
import { FormEntity } from '../forms/entities/form.entity';
import { IdempotencyKeyEntity } from '../idempotency/entities/idempotency-key.entity';
import { LoginFailureEntity } from '../oauth/entities/login-failure.entity';
import { OAuthGrantEntity } from '../oauth/entities/oauth-grant.entity';
import { OAuthModelEntity } from '../oauth/entities/oauth-model.entity';
import { OAuthSecretEntity } from '../oauth/entities/oauth-secret.entity';
import { PasswordLinkEntity } from '../settings/entities/password-link.entity';
import { SettingsOnceEntity } from '../settings/entities/settings-once.entity';
import { SettingsSessionEntity } from '../settings/entities/settings-session.entity';
import { ResponseEntity } from '../responses/entities/response.entity';
import {
  AnswerCountEntity,
  BlockStatsEntity,
  ResponseBucketEntity,
  ResponseCounterEntity,
} from '../responses/entities/response-stats.entity';
import { ApiTokenEntity } from '../tokens/entities/api-token.entity';
import { MembershipEntity } from '../workspaces/entities/membership.entity';
import { UserEntity } from '../workspaces/entities/user.entity';
import { WorkspaceEntity } from '../workspaces/entities/workspace.entity';
import { WebhookAttemptEntity } from '../webhooks/entities/webhook-attempt.entity';
import { WebhookDeliveryEntity } from '../webhooks/entities/webhook-delivery.entity';
import { WebhookEndpointEntity } from '../webhooks/entities/webhook-endpoint.entity';

/** Every entity, for the one DataSource the app, the CLI and the tests share. */
export const ENTITIES = [
  WorkspaceEntity,
  UserEntity,
  MembershipEntity,
  ApiTokenEntity,
  FormEntity,
  BlockEntity,
  ResponseEntity,
  AuditEventEntity,
  IdempotencyKeyEntity,
  ResponseCounterEntity,
  ResponseBucketEntity,
  BlockStatsEntity,
  AnswerCountEntity,
  OAuthModelEntity,
  OAuthGrantEntity,
  OAuthSecretEntity,
  LoginFailureEntity,
  WebhookEndpointEntity,
  WebhookDeliveryEntity,
  WebhookAttemptEntity,
  SettingsSessionEntity,
  SettingsOnceEntity,
  PasswordLinkEntity,
];
