import {
  Column,
  PrimaryGeneratedColumn,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  UpdateDateColumn,
} from 'typeorm';
import type { FormCompute } from '../compute/compute.types';
import type { Quota } from '../limits';
import { WorkspaceEntity } from '../../workspaces/entities/workspace.entity';

export const FORM_STATUSES = ['draft', 'published', 'closed'] as const;
export type FormStatus = (typeof FORM_STATUSES)[number];
export const FORM_ACCESS = ['public', 'invite'] as const;
export type FormAccess = (typeof FORM_ACCESS)[number];

/** A form's receipt setting (issue 48): `to`, an email block's ref; subject and message take recall. */
export interface ReceiptSetting {
  to: string;
  subject?: string;
  message?: string;
}

@Entity({ name: 'forms' })
@Index('IDX_forms_workspace_created', ['workspaceId', 'createdAt', 'id'])
@Index('IDX_forms_closes_at', ['closesAt'], { where: "status = 'published' AND closes_at IS NOT NULL" })
export class FormEntity {
  /** Internal key; never shown. */
  @PrimaryGeneratedColumn('uuid')
  id: string;

  /** Opaque, random and not enumerable: what callers and the respondent URL use. */
  @Column({ name: 'public_id', type: 'text', unique: true })
  publicId: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId: string;

  @Column({ type: 'text' })
  title: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ type: 'text', default: 'draft' })
  status: FormStatus;

  /** Names of the form's hidden fields: values a response carries besides its answers (issue 25). */
  @Column({ name: 'hidden_fields', type: 'jsonb', default: () => "'[]'" })
  hiddenFields: string[];

  /** Whether the respondent page saves answers as a partial response as people go (issue 36). */
  @Column({ name: 'partial_responses', type: 'boolean', default: false })
  partialResponses: boolean;

  /** Variables, endings and thank-you texts (issue 46; see forms/compute); NULL when it has none. */
  @Column({ type: 'jsonb', nullable: true })
  compute: FormCompute | null;

  /** Bumped on every change; update_form can require the version the caller read. */
  @Column({ type: 'integer', default: 1 })
  version: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column({ name: 'published_at', type: 'timestamptz', nullable: true })
  publishedAt: Date | null;

  @Column({ name: 'closed_at', type: 'timestamptz', nullable: true })
  closedAt: Date | null;

  /** Before it the form takes no answers (issue 47); null: at once. */
  @Column({ name: 'opens_at', type: 'timestamptz', nullable: true })
  opensAt: Date | null;

  /** At it a published form reads as closed and is closed by the schedule sweep (issue 47); null: never. */
  @Column({ name: 'closes_at', type: 'timestamptz', nullable: true })
  closesAt: Date | null;

  /** Who may answer (issue 47): 'public', anyone with the link; 'invite', only with an invite. */
  @Column({ type: 'text', default: 'public' })
  access: FormAccess;

  /** At most this many completed responses (issue 47); null: no cap. Counted in response_limits. */
  @Column({ name: 'max_responses', type: 'integer', nullable: true })
  maxResponses: number | null;

  /** Quotas (issue 47; see forms/limits.ts), as stored (conditions' blocks by id); null: none. */
  @Column({ type: 'jsonb', nullable: true })
  quotas: Quota[] | null;

  /** Spam defence of its page (issue 47): off, auto (the challenge past a rate of posts) or always. */
  @Column({ name: 'spam_protection', type: 'text', default: 'auto' })
  spamProtection: 'off' | 'auto' | 'always';

  /** The receipt (issue 48): the respondent's answers mailed to the address an email block (by ref) holds; null: none. */
  @Column({ type: 'jsonb', nullable: true })
  receipt: ReceiptSetting | null;
  /** Its languages (issue 51): BCP 47 tags, the first the default (its own texts' language); empty: one language. */
  @Column({ type: 'jsonb', default: () => "'[]'" })
  languages: string[];

  /** Its texts in its other languages (issue 51; forms/translations): { language: { text key: text } }. */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  translations: Record<string, Record<string, string>>;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workspace_id' })
  workspace?: WorkspaceEntity;
}
