import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { FormEntity } from './form.entity';

/** One block of a form. Its id is stable across edits: answers are keyed by it. */
@Entity({ name: 'blocks' })
export class BlockEntity {
  @PrimaryColumn({ name: 'form_id', type: 'uuid' })
  formId: string;

  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ type: 'integer' })
  position: number;

  @Column({ type: 'text' })
  type: string;

  @Column({ type: 'text' })
  title: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ type: 'boolean', default: false })
  required: boolean;

  /** Type settings: choices [{ id, label }], min, max... */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  settings: Record<string, unknown>;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: FormEntity;
}
