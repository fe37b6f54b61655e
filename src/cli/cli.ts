/**
 * The admin CLI: commander parses the command line (commands, --help, usage errors), each
 * command's options are then checked by its class-validator DTO (cli-args.ts), all before any
 * database is opened; only then does the command run, inside a Nest application context when it
 * needs the services.
 */
import 'reflect-metadata';
import { INestApplicationContext, Module, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { DataSource, DataSourceOptions } from 'typeorm';
import { AuditModule } from '../audit/audit.module';
import { Plan, Role, Scope } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { AppConfig, ConfigError, loadConfig } from '../config/config';
import { SessionsModule } from '../settings/sessions.module';
import { StorageModule } from '../storage/storage.module';
import { PASSWORD_LINK_HOURS, SessionsService } from '../settings/sessions.service';
import { ConfigModule } from '../config/config.module';
import { dataSourceOptions } from '../database/data-source';
import { openGuardedDataSource } from '../database/transaction';
import { checkDatabaseReachable, DatabaseUnreachableError, openDatabase } from '../database/database-url';
import { runMigrations } from '../database/migrate';
import { FormAnswersModule } from '../responses/form-answers.module';
import { DemoModule } from '../demo/demo.module';
import { DemoService } from '../demo/demo.service';
import { OAuthModule } from '../oauth/oauth.module';
import { OAuthService } from '../oauth/oauth.service';
import { TokensModule } from '../tokens/tokens.module';
import { DEFAULT_TOKEN_ROLE, TokensService, TokenView } from '../tokens/tokens.service';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { WorkspacesService } from '../workspaces/workspaces.service';
import {
  MemberAddArgs,
  noOptions,
  parseDuration,
  parseFlags,
  TokenCreateArgs,
  TokenListArgs,
  TokenRevokeArgs,
  UserSetPasswordArgs,
  validateArgs,
  WorkspaceCreateArgs,
  WorkspaceEmbedOriginsArgs,
} from './cli-args';

const PROGRAM = 'npm run --silent cli --';

type Flags = Record<string, string | true>;
/** `warning`: a line for the operator, on stderr (with --json, it is in the object instead). */
type Output = { json: Record<string, unknown>; text: string; warning?: string };

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliInput {
  /** Reads standard input to its end (passwords never travel on the command line). */
  readStdin?: () => Promise<string>;
}

/** What a command may use once its options are valid and the database answers. */
interface RunContext {
  url: string;
  config: AppConfig;
  input: CliInput;
  /** A service from the Nest application context, created on first use (migrate needs none). */
  get<T>(type: Type<T>): Promise<T>;
}

interface OptionSpec {
  /** As commander takes them: `--name <name>` takes a value, `--clear` is a switch. */
  flags: string;
  description: string;
  required?: boolean;
}

interface CommandSpec<A> {
  /** One or two words: `migrate`, `token create`. */
  name: string;
  summary: string;
  options: OptionSpec[];
  /** The usage line after the command's name, when the one built from `options` would mislead. */
  usage?: string;
  /** Checks the options before the database opens, so that a mistake is a quick usage error. */
  parse(flags: Flags): A;
  run(args: A, c: RunContext): Promise<Output>;
}

const command = <A>(spec: CommandSpec<A>) => spec as unknown as CommandSpec<unknown>;
const required = (flags: string, description: string): OptionSpec => ({ flags, description, required: true });
const optional = (flags: string, description: string): OptionSpec => ({ flags, description });

const GROUPS: Record<string, string> = {
  workspace: 'create a workspace, set the sites that may embed its forms',
  member: 'add a member to a workspace or change their role',
  token: 'workspace API tokens',
  user: 'user accounts (sign-in for connecting apps)',
  grant: 'connected apps (OAuth grants)',
};

/**
 * The settings pages refuse to add a person whose password another workspace's link set
 * (PASSWORD_BINDING in src/settings/settings.service.ts); the operator may, and is told that the
 * password does not act in this workspace until they set one.
 */
function boundElsewhereWarning(
  user: { email: string; passwordHash: string | null; passwordWorkspaceId: string | null },
  workspace: { id: string; slug: string },
): string | undefined {
  if (!user.passwordHash || !user.passwordWorkspaceId || user.passwordWorkspaceId === workspace.id) return undefined;
  return (
    `${user.email}'s password was set through a link from another workspace's admin, who may know it: ` +
    `it does not act in ${workspace.slug}. Confirm the account, then set a password with ` +
    `${PROGRAM} user set-password --email ${user.email} --password-stdin`
  );
}

const COMMANDS = [
  command({
    name: 'migrate',
    summary: 'apply the database migrations that have not run yet',
    options: [],
    parse: noOptions,
    async run(_args, c) {
      const ds = await new DataSource(dataSourceOptions(c.url, 1, false)).initialize();
      try {
        const ran = await runMigrations(ds, c.url);
        return {
          json: { migrations: ran },
          text: ran.length ? `Applied: ${ran.join(', ')}` : 'The database is up to date.',
        };
      } finally {
        await ds.destroy();
      }
    },
  }),
  command({
    name: 'workspace create',
    summary: 'create a workspace and its owner',
    options: [
      required('--name <name>', 'display name'),
      required('--slug <slug>', 'lower-case letters, digits and dashes'),
      required('--plan <plan>', 'free or pro'),
      required('--owner-email <email>', 'the owner, created if new'),
    ],
    parse: (flags) => validateArgs(WorkspaceCreateArgs, flags),
    async run(a, c) {
      const { workspace, owner } = await (
        await c.get(WorkspacesService)
      ).create({ name: a.name, slug: a.slug, plan: a.plan as Plan, ownerEmail: a['owner-email'] });
      const view = WorkspacesService.view(workspace);
      // A new person has no password: a one-time link lets them set one (Formwork sends no email).
      // The operator's link carries no workspace: the password set with it is not bound to one.
      const link = owner.passwordHash
        ? null
        : `${c.config.publicUrl}/settings/set-password/${await (await c.get(SessionsService)).passwordLink(owner.id, null)}`;
      const warning = boundElsewhereWarning(owner, workspace);
      return {
        json: {
          workspace: view,
          owner: { id: owner.id, email: owner.email, role: 'owner' },
          setPasswordLink: link,
          ...(warning ? { warning } : {}),
        },
        text: `Created workspace ${view.slug} (${view.plan}), owner ${owner.email}${link ? `\nGive the owner this link to set their password (works once, within ${PASSWORD_LINK_HOURS} hours):\n  ${link}` : ''}`,
        warning,
      };
    },
  }),
  command({
    name: 'workspace embed-origins',
    summary: 'set, clear or (with neither) show the sites allowed to embed the forms',
    options: [
      required('--workspace <slug>', 'the workspace'),
      optional('--set <origins>', 'comma-separated https origins, e.g. https://a.example,https://b.example'),
      optional('--clear', 'allow no site (the default)'),
    ],
    usage: '--workspace <slug> [--set <origins> | --clear] [--json]',
    parse(flags) {
      const a = validateArgs(WorkspaceEmbedOriginsArgs, flags);
      const list = a.set
        ?.split(',')
        .map((o) => o.trim())
        .filter(Boolean);
      if ((a.set !== undefined && a.clear) || (a.set !== undefined && !list?.length)) {
        const message = a.clear ? 'cannot be combined with --clear' : 'needs at least one origin (--clear allows none)';
        throw new ApiError('invalid_arguments', {
          message: `Bad options: --set ${message}`,
          hint: 'Give either --set with origins or --clear; neither shows the list.',
          details: [{ path: '--set', message }],
        });
      }
      return { workspace: a.workspace, list, clear: a.clear === true };
    },
    async run(a, c) {
      const workspaces = await c.get(WorkspacesService);
      // Neither --set nor --clear: show the list as it is.
      const workspace =
        a.list || a.clear
          ? await workspaces.setEmbedOrigins(a.workspace, a.list ?? [])
          : await workspaces.requireBySlug(a.workspace);
      const origins = workspace.embedOrigins;
      return {
        json: { workspace: workspace.slug, embedOrigins: origins },
        text: origins.length
          ? `Forms of ${workspace.slug} may be embedded by: ${origins.join(' ')}`
          : `No site may embed the forms of ${workspace.slug}.`,
      };
    },
  }),
  command({
    name: 'member add',
    summary: 'add a member, or change the role of one',
    options: [
      required('--workspace <slug>', 'the workspace'),
      required('--email <email>', 'the member, created if new'),
      required('--role <role>', 'viewer, editor, admin or owner'),
    ],
    parse: (flags) => validateArgs(MemberAddArgs, flags),
    async run(a, c) {
      const { workspace, user, membership } = await (
        await c.get(WorkspacesService)
      ).addMember(a.workspace, a.email, a.role as Role);
      const warning = boundElsewhereWarning(user, workspace);
      return {
        json: {
          workspace: workspace.slug,
          user: { id: user.id, email: user.email },
          role: membership.role,
          ...(warning ? { warning } : {}),
        },
        text: `${user.email} is now ${membership.role} of ${workspace.slug}`,
        warning,
      };
    },
  }),
  command({
    name: 'token create',
    summary: 'create an API token (its secret is shown only now)',
    options: [
      required('--workspace <slug>', 'the workspace'),
      required('--name <name>', 'what the token is for'),
      optional('--role <role>', `viewer, editor, admin or owner (default: ${DEFAULT_TOKEN_ROLE})`),
      optional('--scopes <scopes>', 'comma-separated, e.g. forms:read,responses:read (default: all)'),
      optional('--expires-in <duration>', 'minutes, hours or days: 30m, 12h, 90d; at most 3650d (default: never)'),
    ],
    parse: (flags) => validateArgs(TokenCreateArgs, flags),
    async run(a, c) {
      const { token, view } = await (
        await c.get(TokensService)
      ).create({
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
    },
  }),
  command({
    name: 'token list',
    summary: "list a workspace's tokens (never their secrets)",
    options: [required('--workspace <slug>', 'the workspace')],
    parse: (flags) => validateArgs(TokenListArgs, flags),
    async run(a, c) {
      const list = await (await c.get(TokensService)).list(a.workspace);
      return { json: { tokens: list }, text: list.length ? list.map(describe).join('\n') : 'No tokens.' };
    },
  }),
  command({
    name: 'token revoke',
    summary: 'revoke a token: every instance refuses it within 5 seconds',
    options: [required('--id <id>', 'the token id (from token list)')],
    parse: (flags) => validateArgs(TokenRevokeArgs, flags),
    async run(a, c) {
      const view = await (await c.get(TokensService)).revoke(a.id);
      return {
        json: { ...view },
        text: `Revoked ${view.id} ("${view.name}"); every instance refuses it within 5 seconds.`,
      };
    },
  }),
  command({
    name: 'user set-password',
    summary: 'set the password a user signs in with to connect apps',
    options: [
      required('--email <email>', 'the user'),
      required('--password-stdin', 'read the password from standard input (never from the command line)'),
    ],
    parse: (flags) => validateArgs(UserSetPasswordArgs, flags),
    async run(a, c) {
      if (!c.input.readStdin) {
        throw new ApiError('invalid_arguments', {
          message: 'No standard input to read the password from.',
          hint: `Pipe it in: echo "$PASSWORD" | ${PROGRAM} user set-password --email E --password-stdin`,
        });
      }
      const password = (await c.input.readStdin()).replace(/\r?\n$/, '');
      // The operator's password: not bound to a workspace (PASSWORD_BINDING in
      // src/settings/settings.service.ts). Whoever signed in with the old one is signed out.
      const user = await (await c.get(OAuthService)).setPassword(a.email, password, null);
      await (await c.get(SessionsService)).endAll(user.userId);
      return {
        json: { user: { id: user.userId, email: user.email }, passwordSet: true },
        text: `Password set for ${user.email}; they can now sign in to connect apps.`,
      };
    },
  }),
  command({
    name: 'grant list',
    summary: 'list the apps connected to a workspace',
    options: [required('--workspace <slug>', 'the workspace')],
    parse: (flags) => validateArgs(TokenListArgs, flags),
    async run(a, c) {
      const grants = await (await c.get(OAuthService)).listGrants(a.workspace);
      return {
        json: { grants },
        text: grants.length
          ? grants
              .map(
                (g) =>
                  `${g.id}  ${g.clientName ?? g.clientId}  ${g.userEmail}  scopes=${g.scopes.join(',')}  ${g.revokedAt ? 'revoked' : 'active'}  since ${g.createdAt}`,
              )
              .join('\n')
          : 'No connected apps.',
      };
    },
  }),
  command({
    name: 'grant revoke',
    summary: 'disconnect an app: its tokens are refused within 5 seconds',
    options: [required('--id <grant-id>', 'the grant id (from grant list)')],
    parse: (flags) => validateArgs(TokenRevokeArgs, flags),
    async run(a, c) {
      const revoked = await (await c.get(OAuthService)).revokeGrant(a.id);
      return { json: revoked, text: `Disconnected ${a.id}; its tokens are refused everywhere within 5 seconds.` };
    },
  }),
  command({
    name: 'demo',
    summary: 'create (or reuse) a demo workspace with forms and responses, and print a token',
    options: [],
    parse: noOptions,
    async run(_args, c) {
      const demo = await (await c.get(DemoService)).create();
      return {
        json: demo,
        text: `${demo.created ? 'Created' : 'Reused'} the demo workspace "${demo.workspace.slug}" with forms ${demo.forms.join(', ')}.\nToken (admin): ${demo.token}`,
      };
    },
  }),
];

/**
 * Runs one admin command. With --json, stdout is exactly one JSON object (the error envelope on
 * failure). Exit codes: 0 done (--help included), 1 failed, 2 bad usage, arguments or environment.
 */
export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  input: CliInput = {},
): Promise<CliResult> {
  // Known before parsing, so that even a command line commander refuses gets its JSON envelope.
  const asJson = argv.includes('--json');
  const help = { text: '' };
  const picked: { spec?: CommandSpec<unknown>; cmd?: Command } = {};
  const program = buildProgram(help, (spec, cmd) => Object.assign(picked, { spec, cmd }));
  let args: unknown;
  try {
    await program.parseAsync(argv, { from: 'user' });
    if (!picked.spec || !picked.cmd) throw new Error('commander selected no command'); // it shows help instead
    args = picked.spec.parse(optionsOf(picked.cmd));
  } catch (err) {
    // --help, or `help [command]`: the help went to stdout. (Help after a mistake, such as a
    // missing command, goes to stderr, which runCli writes itself below.)
    if (
      err instanceof CommanderError &&
      (err.code === 'commander.helpDisplayed' || err.code === 'commander.help') &&
      help.text
    ) {
      return { code: 0, stdout: help.text, stderr: '' };
    }
    const target = picked.cmd ?? commandNamedBy(program, argv);
    if (err instanceof CommanderError) return usageError(fromCommander(err, target), target, asJson);
    if (err instanceof ApiError && err.code === 'invalid_arguments') return usageError(err, target, asJson);
    return failure(err, asJson);
  }

  try {
    const config = loadConfig(env);
    const database = await openDatabase(config);
    try {
      // Admin commands (migrate's advisory lock) need a session: the direct URL, not a pooler's.
      if (!database.embedded) await checkDatabaseReachable(database.directUrl);
      const out = await execute(picked.spec, args, config, database.directUrl, input);
      return {
        code: 0,
        stdout: asJson ? `${JSON.stringify(out.json)}\n` : `${out.text}\n`,
        stderr: out.warning && !asJson ? `warning: ${out.warning}\n` : '',
      };
    } finally {
      await database.close();
    }
  } catch (err) {
    return failure(err, asJson);
  }
}

function buildProgram(help: { text: string }, pick: (spec: CommandSpec<unknown>, cmd: Command) => void): Command {
  const program = new Command(PROGRAM)
    .description('Formwork admin commands. They use the same DATABASE_URL or DATA_DIR as the service.')
    .option('--json', 'print exactly one JSON object (the error envelope on failure)')
    .usage('<command> [options] [--json]')
    // Inherited by every command defined below: throw instead of exiting, collect the help text,
    // and leave error messages to runCli (which adds the usage and the JSON envelope).
    .exitOverride()
    .configureOutput({ writeOut: (s) => (help.text += s), writeErr: () => undefined, outputError: () => undefined })
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .addHelpText(
      'after',
      '\nExit codes: 0 done, 1 failed, 2 bad usage or arguments. Run any command with --help for its options.',
    );
  for (const spec of COMMANDS) {
    const words = spec.name.split(' ');
    let parent = program;
    if (words.length === 2)
      parent =
        program.commands.find((c) => c.name() === words[0]) ?? program.command(words[0]).description(GROUPS[words[0]]);
    const cmd = parent
      .command(words[words.length - 1])
      .description(spec.summary)
      // Unknown options and stray words are kept, so that the DTO reports every problem at once.
      .allowUnknownOption()
      .allowExcessArguments()
      .usage(spec.usage ?? [...spec.options.map((o) => (o.required ? o.flags : `[${o.flags}]`)), '[--json]'].join(' '))
      .action((_options, self: Command) => pick(spec, self));
    for (const o of spec.options) {
      const description = o.required ? `${o.description} (required)` : o.description;
      if (o.flags.includes('<')) cmd.option(o.flags, description, optionValue);
      else cmd.option(o.flags, description);
    }
  }
  return program;
}

/** `--name --role viewer` would take "--role" as the name: refuse a value that is another option. */
function optionValue(value: string): string {
  if (value.startsWith('--')) throw new InvalidArgumentError(`It needs a value, not the option ${value}.`);
  return value;
}

/** The command's options by their names on the command line (`owner-email`), unknown ones included. */
function optionsOf(cmd: Command): Flags {
  const flags: Flags = {};
  for (const o of cmd.options) {
    const value = cmd.getOptionValue(o.attributeName()) as string | true | undefined;
    if (value !== undefined && o.long) flags[o.long.slice(2)] = value;
  }
  const rest = parseFlags(cmd.args);
  if (rest.positional.length) {
    throw new ApiError('invalid_arguments', {
      message: `Unexpected argument "${rest.positional[0]}": this command takes only options.`,
      hint: 'Give values with their option, e.g. --name "CI bot" (quote values with spaces).',
    });
  }
  return { ...flags, ...rest.flags };
}

/** The deepest command the words of argv name (for the usage to show after commander refused them). */
function commandNamedBy(program: Command, argv: string[]): Command {
  let cmd = program;
  for (const word of argv) {
    const sub = word.startsWith('-') ? undefined : cmd.commands.find((c) => c.name() === word);
    if (!sub) break;
    cmd = sub;
  }
  return cmd;
}

function fullName(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

function fromCommander(err: CommanderError, cmd: Command): ApiError {
  const name = fullName(cmd);
  // "error: unknown option '--x'" -> "Unknown option '--x'."
  const said = err.message.replace(/^error: /, '');
  const message =
    err.code === 'commander.help'
      ? name
        ? `"${name}" needs a command: ${cmd.commands.map((c) => c.name()).join(', ')}.`
        : 'No command given.'
      : `${said.charAt(0).toUpperCase()}${said.slice(1)}${/[.?!]$/.test(said) ? '' : '.'}`;
  const option = /'(--[a-z-]+)/.exec(said)?.[1];
  const why: Record<string, string> = {
    'commander.unknownOption': 'is not an option of this command',
    'commander.optionMissingArgument': 'needs a value',
    'commander.invalidArgument': 'needs a value',
  };
  const details = option && why[err.code] ? [{ path: option, message: why[err.code] }] : undefined;
  return new ApiError('invalid_arguments', {
    message,
    hint: `Run "${PROGRAM} ${name ? `${name} ` : ''}--help" for the usage.`,
    details,
  });
}

/** Exit 2: the error (the envelope on stdout with --json), then the command's usage on stderr. */
function usageError(error: ApiError, cmd: Command, asJson: boolean): CliResult {
  const usage = cmd.helpInformation();
  return {
    code: 2,
    stdout: asJson ? `${JSON.stringify(error.toJSON())}\n` : '',
    stderr: `${asJson ? '' : `error: ${error.message}\n  hint: ${error.hint}\n\n`}${usage}`,
  };
}

function failure(err: unknown, asJson: boolean): CliResult {
  const error =
    err instanceof ApiError
      ? err
      : err instanceof ConfigError
        ? new ApiError('invalid_arguments', { message: err.message, hint: 'Fix the environment variable.' })
        : err instanceof DatabaseUnreachableError
          ? new ApiError('service_unavailable', {
              message: err.message,
              hint: 'Check DATABASE_URL (host, port, user, password, database) and that PostgreSQL is running and reachable from here.',
            })
          : undefined;
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

async function execute(
  spec: CommandSpec<unknown>,
  args: unknown,
  config: AppConfig,
  url: string,
  input: CliInput,
): Promise<Output> {
  let ctx: INestApplicationContext | undefined;
  const get = async <T>(type: Type<T>): Promise<T> => {
    ctx ??= await NestFactory.createApplicationContext(
      cliModule(config, dataSourceOptions(url, Math.min(config.databasePoolSize, 4), false)),
      {
        logger: false,
        abortOnError: false,
      },
    );
    return ctx.get(type);
  };
  try {
    return await spec.run(args, { url, config, input, get });
  } finally {
    await ctx?.close();
  }
}

function cliModule(config: AppConfig, options: DataSourceOptions): Type<unknown> {
  // The database already answered (checkDatabaseReachable): fail at once rather than retry for 27 s.
  @Module({
    imports: [
      ConfigModule.forConfig(config),
      TypeOrmModule.forRootAsync({
        useFactory: () => ({ ...options, retryAttempts: 0, autoLoadEntities: true }),
        dataSourceFactory: openGuardedDataSource,
      }),
      AuditModule,
      // Global, as in the service: deleting forms and responses deletes their files too.
      StorageModule,
      WorkspacesModule,
      TokensModule,
      DemoModule,
      FormAnswersModule,
      OAuthModule,
      SessionsModule,
    ],
  })
  class CliModule {}
  return CliModule;
}

function describe(t: TokenView): string {
  const state = t.revokedAt ? 'revoked' : t.expiresAt && new Date(t.expiresAt) < new Date() ? 'expired' : 'active';
  return `${t.id}  ${t.prefix}…  ${t.name}  role=${t.role}  scopes=${t.scopes.join(',')}  ${state}  last used ${t.lastUsedAt ?? 'never'}`;
}
