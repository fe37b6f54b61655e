import type { EntityManager } from 'typeorm';
import { prepared } from '../database/prepared';

/**
 * The origins a workspace lets frame its forms' pages (the page's CSP), read on every page and
 * post: one prepared statement of plain SQL rather than the entity's query builder, whose making of
 * the query cost more CPU than the rest of a cached page (issue 52). Read per request, so a change
 * of the list is served at once, on every instance. [] for an unknown workspace.
 */
export async function embedOriginsOf(manager: EntityManager, workspaceId: string): Promise<string[]> {
  const rows: Array<{ origins: string[] | null }> = await manager.query(
    prepared(manager, 'SELECT embed_origins AS origins FROM workspaces WHERE id = $1'),
    [workspaceId],
  );
  return rows[0]?.origins ?? [];
}
