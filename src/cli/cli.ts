import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditModule } from '../audit/audit.module';
import { Plan, Role, Scope } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { AppConfig, ConfigError, loadConfig } from '../config/config';
import { ConfigModule } from '../config/config.module';
import { dataSourceOptions } from '../database/data-source';
import { openDatabase } from '../database/database-url';
import { runMigrations } from '../database/migrate';
import { DemoModule } from '../demo/demo.module';
import { DemoService } from '../demo/demo.service';
import { OAuthModule } from '../oauth/oauth.module';
import { OAuthService } from '../oauth/oauth.service';
import { TokensModule } from '../tokens/tokens.module';
import { TokensService, TokenView } from '../tokens/tokens.service';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { MemberAddArgs, noOptions, UserSetPasswordArgs, parseDuration, parseFlags, TokenCreateArgs, TokenListArgs, TokenRevokeArgs, validateArgs, WorkspaceCreateArgs, WorkspaceEmbedOriginsArgs } from './cli-args';

const USAGE = `Usage: npm run --silent cli -- <command> [options] [--json]
  migrate
  workspace create --name N --slug S --plan free|pro --owner-email E
  workspace embed-origins --workspace S [--set https://a.example,https://b.example | --clear]
  member add --workspace S --email E --role viewer|editor|admin|owner
  token create --workspace S --name N [--role R] [--scopes a,b] [--expires-in 90d]
  token list --workspace S
  token revoke --id ID
  user set-password --email E --password-stdin
  grant list --workspace S
  grant revoke --id GRANT_ID
  demo`;

type Output = { json: Record<string, unknown>; text: string };

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs one admin command. With --json, stdout is exactly one JSON object (the error envelope on
 * failure). Exit codes: 0 done, 1 failed, 2 bad usage or arguments.
 */
export interface CliInput {
  /** Reads standard input to its end (passwords never travel on the command line). */
  readStdin?: () => Promise<string>;
}

export async function runCli(argv: string[], env: NodeJS.ProcessEnv = process.env, input: CliInput = {}): Promise<CliResult> {
  const { positional, flags } = parseFlags(argv);
  const asJson = flags.json === true;
  const command = positional.join(' ');
  try {
    const config = loadConfig(env);
    const database = await openDatabase(config);
    try {
      const out = await run(command, flags, config, database.url, input);
      return { code: 0, stdout: asJson ? `${JSON.stringify(out.json)}\n` : `${out.text}\n`, stderr: '' };
    } finally {
      await database.close();
    }
  } catch (err) {
    const error =
      err instanceof ApiError ? err : err instanceof ConfigError ? new ApiError('invalid_arguments', { message: err.message, hint: 'Fix the environment variable.' }) : undefined;
    if (!error) {
      const stderr = `formwork: ${err instanceof Error ? err.message : String(err)}\n`;
      return { code: 1, stdout: asJson ? `${JSON.stringify(new ApiError('internal_error').toJSON())}\n` : '', stderr };
    }
    return {
      code: error.code === 'invalid_arguments' ? 2 : 1,
      stdout: asJson ? `${JSON.stringify(error.toJSON())}\n` : '',
      stderr: asJson ? '' : `error: ${error.message}\n  hint: ${error.hint}\n`,
    };
  }
}

async function run(command: string, flags: Record<string, string | true>, config: AppConfig, url: string, input: CliInput): Promise<Output> {
  if (command === 'migrate') {
    const ds = await new DataSource(dataSourceOptions(url, 1, false)).initialize();
    try {
      const ran = await runMigrations(ds, url);
      return { json: { migrations: ran }, text: ran.length ? `Applied: ${ran.join(', ')}` : 'The database is up to date.' };
    } finally {
      await ds.destroy();
    }
  }
  const known = ['workspace create', 'workspace embed-origins', 'member add', 'token create', 'token list', 'token revoke', 'user set-password', 'grant list', 'grant revoke', 'demo'];
  if (!known.includes(command)) {
    throw new ApiError('invalid_arguments', { message: command ? `Unknown command "${command}".` : 'No command given.', hint: USAGE });
  }

  @Module({
    imports: [ConfigModule.forConfig(config), TypeOrmModule.forRoot(dataSourceOptions(url, Math.min(config.databasePoolSize, 4), false)), AuditModule, WorkspacesModule, TokensModule, DemoModule, OAuthModule],
  })
  class CliModule {}
  const ctx = await NestFactory.createApplicationContext(CliModule, { logger: false, abortOnError: false });
  try {
    const workspaces = ctx.get(WorkspacesService);
    const tokens = ctx.get(TokensService);
    switch (command) {
      case 'workspace create': {
        const a = validateArgs(WorkspaceCreateArgs, flags);
        const { workspace, owner } = await workspaces.create({ name: a.name, slug: a.slug, plan: a.plan as Plan, ownerEmail: a['owner-email'] });
        const view = WorkspacesService.view(workspace);
        return { json: { workspace: view, owner: { id: owner.id, email: owner.email, role: 'owner' } }, text: `Created workspace ${view.slug} (${view.plan}), owner ${owner.email}` };
      }
      case 'workspace embed-origins': {
        const a = validateArgs(WorkspaceEmbedOriginsArgs, flags);
        const list = a.set?.split(',').map((o) => o.trim()).filter(Boolean);
        if ((a.set !== undefined && a.clear) || (a.set !== undefined && !list?.length)) {
          const message = a.clear ? 'cannot be combined with --clear' : 'needs at least one origin (--clear allows none)';
          throw new ApiError('invalid_arguments', { message: `Bad options: --set ${message}`, hint: 'Give either --set with origins or --clear; neither shows the list.', details: [{ path: '--set', message }] });
        }
        // Neither --set nor --clear: show the list as it is.
        const workspace = list || a.clear ? await workspaces.setEmbedOrigins(a.workspace, list ?? []) : await workspaces.requireBySlug(a.workspace);
        const origins = workspace.embedOrigins;
        return {
          json: { workspace: workspace.slug, embedOrigins: origins },
          text: origins.length ? `Forms of ${workspace.slug} may be embedded by: ${origins.join(' ')}` : `No site may embed the forms of ${workspace.slug}.`,
        };
      }
      case 'member add': {
        const a = validateArgs(MemberAddArgs, flags);
        const { workspace, user, membership } = await workspaces.addMember(a.workspace, a.email, a.role as Role);
        return {
          json: { workspace: workspace.slug, user: { id: user.id, email: user.email }, role: membership.role },
          text: `${user.email} is now ${membership.role} of ${workspace.slug}`,
        };
      }
      case 'token create': {
        const a = validateArgs(TokenCreateArgs, flags);
        const { token, view } = await tokens.create({
          workspaceSlug: a.workspace,
          name: a.name,
          role: a.role as Role | undefined,
          scopes: a.scopes?.split(',') as Scope[] | undefined,
          expiresAt: a['expires-in'] ? new Date(Date.now() + parseDuration(a['expires-in'])) : undefined,
        });
        return {
          json: { ...view, token },
          text: `Created token "${view.name}" (${view.id}), role ${view.role}, scopes ${view.scopes.join(',')}${view.expiresAt ? `, expires ${view.expiresAt}` : ''}.\nIt is shown only now; store it safely:\n${token}`,
        };
      }
      case 'token list': {
        const a = validateArgs(TokenListArgs, flags);
        const list = await tokens.list(a.workspace);
        return { json: { tokens: list }, text: list.length ? list.map(describe).join('\n') : 'No tokens.' };
      }
      case 'token revoke': {
        const a = validateArgs(TokenRevokeArgs, flags);
        const view = await tokens.revoke(a.id);
        return { json: { ...view }, text: `Revoked ${view.id} ("${view.name}"); every instance refuses it within 5 seconds.` };
      }
      case 'user set-password': {
        const a = validateArgs(UserSetPasswordArgs, flags);
        if (!input.readStdin) throw new ApiError('invalid_arguments', { message: 'No standard input to read the password from.', hint: 'Pipe it in: echo "$PASSWORD" | npm run --silent cli -- user set-password --email E --password-stdin' });
        const password = (await input.readStdin()).replace(/\r?\n$/, '');
        const user = await ctx.get(OAuthService).setPassword(a.email, password);
        return { json: { user: { id: user.userId, email: user.email }, passwordSet: true }, text: `Password set for ${user.email}; they can now sign in to connect apps.` };
      }
      case 'grant list': {
        const a = validateArgs(TokenListArgs, flags);
        const grants = await ctx.get(OAuthService).listGrants(a.workspace);
        return {
          json: { grants },
          text: grants.length
            ? grants.map((g) => `${g.id}  ${g.clientName ?? g.clientId}  ${g.userEmail}  scopes=${g.scopes.join(',')}  ${g.revokedAt ? 'revoked' : 'active'}  since ${g.createdAt}`).join('\n')
            : 'No connected apps.',
        };
      }
      case 'grant revoke': {
        const a = validateArgs(TokenRevokeArgs, flags);
        const revoked = await ctx.get(OAuthService).revokeGrant(a.id);
        return { json: revoked, text: `Disconnected ${a.id}; its tokens are refused everywhere within 5 seconds.` };
      }
      case 'demo': {
        noOptions(flags);
        const demo = await ctx.get(DemoService).create();
        return {
          json: demo,
          text: `${demo.created ? 'Created' : 'Reused'} the demo workspace "${demo.workspace.slug}" with forms ${demo.forms.join(', ')}.\nToken (admin): ${demo.token}`,
        };
      }
    }
    throw new ApiError('invalid_arguments', { hint: USAGE });
  } finally {
    await ctx.close();
  }
}

function describe(t: TokenView): string {
  const state = t.revokedAt ? 'revoked' : t.expiresAt && new Date(t.expiresAt) < new Date() ? 'expired' : 'active';
  return `${t.id}  ${t.prefix}…  ${t.name}  role=${t.role}  scopes=${t.scopes.join(',')}  ${state}  last used ${t.lastUsedAt ?? 'never'}`;
}
