/** The admin CLI's options per command, as class-validator DTOs, and the parsing of durations and flags. */
import { plainToInstance } from 'class-transformer';
import {
  IsEmail,
  IsIn,
  IsNotEmpty,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  ValidateBy,
  validateSync,
} from 'class-validator';
import { PLANS, ROLES, SCOPES } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { SLUG_PATTERN } from '../workspaces/slug';

/** `--name value --json` -> { name: 'value', json: true } */
export function parseFlags(argv: string[]): { positional: string[]; flags: Record<string, string | true> } {
  const positional: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const key = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
      const inline = eq === -1 ? undefined : arg.slice(eq + 1); // only the first = splits: --name=a=b
      if (inline !== undefined) flags[key] = inline;
      else if (argv[i + 1] !== undefined && !argv[i + 1].startsWith('--')) flags[key] = argv[++i];
      else flags[key] = true;
    } else positional.push(arg);
  }
  return { positional, flags };
}

export class WorkspaceCreateArgs {
  @IsString() @IsNotEmpty() @MaxLength(200) name: string;
  @IsString() @Matches(SLUG_PATTERN, { message: 'slug must be lower-case letters, digits and dashes' }) slug: string;
  @IsIn(PLANS) plan: string;
  @IsEmail() 'owner-email': string;
}

export class WorkspaceEmbedOriginsArgs {
  @IsString() @IsNotEmpty() workspace: string;
  @IsOptional()
  @IsString({ message: 'set needs a comma-separated list of origins' })
  @IsNotEmpty({ message: 'set needs a comma-separated list of origins' })
  set?: string;
  @IsOptional() @IsIn([true], { message: 'clear takes no value' }) clear?: true;
}

export class MemberAddArgs {
  @IsString() @IsNotEmpty() workspace: string;
  @IsEmail() email: string;
  @IsIn(ROLES) role: string;
}

/** The longest --expires-in: ten years. Far beyond that a Date overflows (internal_error, exit 1). */
export const MAX_EXPIRY_DAYS = 3650;

/** An expiry in the right format (checked by @Matches) but longer than MAX_EXPIRY_DAYS is refused. */
function ExpiryAtMostTenYears(): PropertyDecorator {
  return ValidateBy({
    name: 'maxExpiry',
    validator: {
      validate: (value) =>
        typeof value !== 'string' ||
        !/^[1-9]\d*[mhd]$/.test(value) ||
        parseDuration(value) <= MAX_EXPIRY_DAYS * 86_400_000,
      defaultMessage: () => `expires-in must be at most ${MAX_EXPIRY_DAYS}d (10 years)`,
    },
  });
}

export class TokenCreateArgs {
  @IsString() @IsNotEmpty() workspace: string;
  @IsString() @IsNotEmpty() @MaxLength(200) name: string;
  @IsOptional() @IsIn(ROLES) role?: string;
  @IsOptional()
  @Matches(new RegExp(`^(${SCOPES.join('|')})(,(${SCOPES.join('|')}))*$`), {
    message: `scopes must be a comma-separated list of ${SCOPES.join(', ')}`,
  })
  scopes?: string;
  @IsOptional()
  @Matches(/^[1-9]\d*[mhd]$/, { message: 'expires-in must be like 30m, 12h or 90d' })
  @ExpiryAtMostTenYears()
  'expires-in'?: string;
}

export class TokenListArgs {
  @IsString() @IsNotEmpty() workspace: string;
}

export class UserSetPasswordArgs {
  @IsEmail() email: string;
  @IsIn([true], {
    message: 'password-stdin is required: the password is read from standard input, never from the command line',
  })
  'password-stdin': true;
}

export class TokenRevokeArgs {
  @IsString() @IsNotEmpty() id: string;
}

/** Validates flags against a DTO; every problem becomes a detail of one invalid_arguments error. */
export function validateArgs<T extends object>(cls: new () => T, flags: Record<string, string | true>): T {
  const values = Object.fromEntries(Object.entries(flags).filter(([k]) => k !== 'json'));
  const args = plainToInstance(cls, values);
  const errors = validateSync(args, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length) {
    const details = errors.map((e) => {
      const first = Object.values(e.constraints ?? {})[0] ?? 'is invalid';
      // A missing option is "required", not "must be shorter than 200 characters"; a message that
      // already says why it is required (--password-stdin) is kept.
      const missing = e.value === undefined && !first.includes('required');
      return {
        path: `--${e.property}`,
        message: e.constraints?.whitelistValidation
          ? 'is not an option of this command'
          : missing
            ? 'is required'
            : first,
      };
    });
    throw new ApiError('invalid_arguments', {
      message: `Bad options: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`,
      hint: 'Run the command with --help to see its options.',
      details,
    });
  }
  return args;
}

export function parseDuration(text: string): number {
  const n = Number(text.slice(0, -1));
  const unit = text.slice(-1);
  return n * (unit === 'm' ? 60_000 : unit === 'h' ? 3600_000 : 86_400_000);
}

/** For commands that take no options: anything but --json is a mistake worth reporting. */
export function noOptions(flags: Record<string, string | true>): void {
  const extra = Object.keys(flags).filter((k) => k !== 'json');
  if (extra.length) {
    const details = extra.map((k) => ({ path: `--${k}`, message: 'is not an option of this command' }));
    throw new ApiError('invalid_arguments', {
      message: `Bad options: ${extra.map((k) => `--${k}`).join(', ')} (this command takes none)`,
      hint: 'This command takes no options.',
      details,
    });
  }
}
