/**
 * Spam defence of the respondent pages (issue 47, item 5): one gate for every page post.
 * - A honeypot field (HONEYPOT: hidden from people, filled by bots that fill every field) and a
 *   minimum time to fill (from when the page state says the walk began) on every post.
 * - ALTCHA's proof of work, self-hosted (altcha-lib here, the altcha widget served by the page):
 *   required under spamProtection "always", and under "auto" once the form's or the client's page
 *   posts pass a per-minute rate, counted in the request budgets' store (Redis when configured, so
 *   shared by every instance). A challenge names its form (in its signed data) and is used once
 *   (its nonce claimed in settings_once, shared by every instance, kept longer than it lives).
 * A post judged as spam is kept apart (SpamResponses) and answered like any other.
 */
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes, randomInt } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createChallenge, verifySolution, type Challenge, type Solution } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { sharedSecret } from '../../oauth/shared-secret';
import { RateLimitService } from '../../rate-limit/rate-limit.service';
import { SessionsService } from '../../settings/sessions.service';
import type { FormRecord } from '../../forms/forms.service';

/** Why a post was judged as spam (stored with it). */
export type SpamReason = 'honeypot' | 'too_fast' | 'no_challenge' | 'bad_challenge';

/**
 * The honeypot's field name: no block id looks like it (they start with b_), bots fill a comment
 * box, and browsers' autofill has nothing for it (unlike "website" or "email", which it may fill).
 */
export const HONEYPOT = 'comments';
/** The field the widget posts its solution in. */
export const CHALLENGE_FIELD = 'altcha';

/**
 * The work: PBKDF2-SHA-256 at COST iterations per try, the answer among the first COUNTER_MAX
 * counters (about 1 s in a browser's workers). Deterministic mode: the server knows the counter and
 * signs the key, so verifying is two HMACs, not a key derivation.
 */
const ALGORITHM = 'PBKDF2/SHA-256';
const COST = 1_000;
const COUNTER_MIN = 500;
const COUNTER_MAX = 2_500;
const CHALLENGE_TTL_MS = 20 * 60_000;

/** What one page post brings to the gate. */
export interface PagePost {
  /** The honeypot field's value. */
  honeypot: unknown;
  /** When the page state says the walk began (ms), or undefined without a valid state. */
  startedAt: number | undefined;
  /** The widget's payload (base64 JSON of { challenge, solution }), if any. */
  payload: unknown;
  /** Whether this post must carry a solved challenge (needsChallenge). */
  challenge: boolean;
  /** A reason found on an earlier page of the walk. */
  earlier?: string;
}

@Injectable()
export class SpamGate {
  private keys?: Promise<{ challenge: string; key: string }>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly rateLimit: RateLimitService,
    private readonly sessions: SessionsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Counts this page post toward the form's and the client's rates; whether it must carry a solved
   * challenge: always under "always", never under "off", under "auto" once either rate is passed.
   */
  async needsChallenge(form: FormRecord, ip: string | undefined): Promise<boolean> {
    if (form.access === 'invite') return false; // see judge
    const setting = form.spamProtection ?? 'auto';
    if (setting !== 'auto') return setting === 'always';
    const { formPostsPerMin, ipPostsPerMin } = this.config.spam;
    return this.rateLimit.passesEither(
      [`spam:form:${form.id}`, formPostsPerMin],
      [`spam:ip:${ip ?? 'unknown'}`, ipPostsPerMin],
    );
  }

  /** A fresh challenge for `form`'s page (what the widget fetches). */
  async challenge(form: FormRecord): Promise<Challenge> {
    const keys = await this.secrets();
    return createChallenge({
      algorithm: ALGORITHM,
      cost: COST,
      counter: randomInt(COUNTER_MIN, COUNTER_MAX),
      deriveKey,
      data: { f: form.id },
      expiresAt: new Date(Date.now() + CHALLENGE_TTL_MS),
      hmacSignatureSecret: keys.challenge,
      hmacKeySignatureSecret: keys.key,
    });
  }

  /**
   * The verdict on a post: a spam reason, 'replayed' (a solved challenge already used: the caller
   * refuses it, nothing stored), or undefined (a person, as far as the gate can tell). A solved
   * challenge is claimed here, so a second post with it is 'replayed'.
   */
  async judge(form: FormRecord, post: PagePost): Promise<SpamReason | 'replayed' | undefined> {
    // Spam defence is for public forms: an invite-only form's single-use invitations are its defence,
    // and a post without one is refused as uninvited, never kept (as spam) for an owner to restore.
    if (form.spamProtection === 'off' || form.access === 'invite') return undefined;
    if (post.earlier) return post.earlier as SpamReason;
    if (filled(post.honeypot)) return 'honeypot';
    const { minFillMs } = this.config.spam;
    if (minFillMs > 0 && (post.startedAt === undefined || Date.now() - post.startedAt < minFillMs)) return 'too_fast';
    if (!post.challenge) return undefined;
    if (typeof post.payload !== 'string' || post.payload === '') return 'no_challenge';
    const nonce = await this.verify(form, post.payload);
    if (!nonce) return 'bad_challenge';
    return (await this.sessions.useNonce(`altcha:${nonce}`)) ? undefined : 'replayed';
  }

  /** The challenge's nonce when `payload` solves a challenge this service made for `form`, not expired; else undefined. */
  async verify(form: FormRecord, payload: string): Promise<string | undefined> {
    let parsed: { challenge?: Challenge; solution?: Solution };
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64').toString('utf8')) as typeof parsed;
    } catch {
      return undefined;
    }
    const { challenge, solution } = parsed ?? {};
    if (!challenge?.parameters || !solution || challenge.parameters.data?.f !== form.id) return undefined;
    const keys = await this.secrets();
    try {
      const result = await verifySolution({
        challenge,
        solution,
        deriveKey,
        hmacSignatureSecret: keys.challenge,
        hmacKeySignatureSecret: keys.key,
      });
      return result.verified ? String(challenge.parameters.nonce) : undefined;
    } catch {
      return undefined; // a payload of the wrong shape
    }
  }

  /** The two HMAC keys every instance shares (made by the first that needs them). */
  private secrets(): Promise<{ challenge: string; key: string }> {
    this.keys ??= sharedSecret(this.db, 'altcha-keys', () => ({
      challenge: randomBytes(32).toString('base64url'),
      key: randomBytes(32).toString('base64url'),
    })).catch((err: unknown) => {
      this.keys = undefined;
      throw err;
    });
    return this.keys;
  }
}

/** 'honeypot' when the honeypot field carries anything (on any page post of a walk), else undefined. */
export function honeypotReason(value: unknown): SpamReason | undefined {
  return filled(value) ? 'honeypot' : undefined;
}

function filled(value: unknown): boolean {
  return Array.isArray(value) ? value.some(filled) : typeof value === 'string' && value.trim() !== '';
}
