import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { FormEntity } from '../../forms/entities/form.entity';

/**
 * A form's limits as counters (issue 47): its cap (name '') and each quota (its name), with the
 * completed responses counted toward it. The store statement locks the rows its responses count
 * toward and admits only those that fit (migration 1796000590000); update_form rewrites them.
 */
@Entity({ name: 'response_limits' })
export class ResponseLimitEntity {
  @PrimaryColumn({ name: 'form_id', type: 'uuid', primaryKeyConstraintName: 'PK_response_limits' })
  formId: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_response_limits' })
  name: string;

  @Column({ type: 'integer' })
  max: number;

  @Column({ type: 'integer', default: 0 })
  count: number;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id', foreignKeyConstraintName: 'FK_response_limits_form' })
  form?: FormEntity;
}
