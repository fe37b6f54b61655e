import { Column, PrimaryGeneratedColumn, CreateDateColumn, Entity } from 'typeorm';
import type { Plan } from '../../common/access/roles';

@Entity({ name: 'workspaces' })
export class WorkspaceEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  name: string;

  /** URL-safe handle used by the CLI and settings pages. */
  @Column({ type: 'text', unique: true })
  slug: string;

  @Column({ type: 'text', default: 'free' })
  plan: Plan;

  /** Origins allowed to frame the respondent pages (CSP frame-ancestors); empty: no site may. See embed-origins.ts. */
  @Column({ name: 'embed_origins', type: 'text', array: true, default: () => "'{}'" })
  embedOrigins: string[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
