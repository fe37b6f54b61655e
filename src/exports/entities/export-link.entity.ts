import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * An export link's grant (see ExportLinkStore): what it downloads, stored here so that the link
 * itself is short whatever the filter. Keyed by the SHA-256 of the link, never the link (a
 * credential). Kept until `expires_at`, then swept.
 */
@Entity({ name: 'export_links' })
@Index('IDX_export_links_expires_at', ['expiresAt'])
export class ExportLinkEntity {
  /** SHA-256 of the link's token, base64url. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_export_links' })
  id: string;

  /** The ExportGrant: workspace, credential, form, format, answersBy, the filter as checked. */
  @Column({ type: 'jsonb' })
  payload: unknown;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}
