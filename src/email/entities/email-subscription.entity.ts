import { Check, Column, Entity, Generated, Index, JoinColumn, ManyToOne, PrimaryColumn, Unique } from 'typeorm';
import { FormEntity } from '../../forms/entities/form.entity';
import { UserEntity } from '../../workspaces/entities/user.entity';
import { WorkspaceEntity } from '../../workspaces/entities/workspace.entity';

/** A member's notifications of one form (migration 1796000620000): each response, or an hourly or daily digest. */
@Entity({ name: 'email_subscriptions' })
@Unique('UQ_email_subscriptions_id', ['id'])
@Index('IDX_email_subscriptions_user', ['userId'])
@Index('IDX_email_subscriptions_digest', ['digestFrom'], { where: `mode <> 'each'` })
@Check('email_subscriptions_mode_check', `"mode" IN ('each', 'hourly', 'daily')`)
export class EmailSubscriptionEntity {
  @Column({ type: 'uuid' })
  @Generated('uuid')
  id: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId: string;

  @PrimaryColumn({ name: 'form_id', type: 'uuid', primaryKeyConstraintName: 'PK_email_subscriptions' })
  formId: string;

  @PrimaryColumn({ name: 'user_id', type: 'uuid', primaryKeyConstraintName: 'PK_email_subscriptions' })
  userId: string;

  @Column({ type: 'text' })
  mode: string;

  /** Where the next digest starts. */
  @Column({ name: 'digest_from', type: 'timestamptz', default: () => 'now()' })
  digestFrom: Date;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workspace_id', foreignKeyConstraintName: 'email_subscriptions_workspace_id_fkey' })
  workspace?: WorkspaceEntity;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id', foreignKeyConstraintName: 'email_subscriptions_form_id_fkey' })
  form?: FormEntity;

  @ManyToOne(() => UserEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id', foreignKeyConstraintName: 'email_subscriptions_user_id_fkey' })
  user?: UserEntity;
}
