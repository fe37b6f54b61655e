import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config/config';

export function testDatabaseUrl(): string {
  const url = process.env.FORMWORK_TEST_DATABASE_URL;
  if (!url)
    throw new Error(
      'FORMWORK_TEST_DATABASE_URL is not set: run the tests with `npm test` (jest globalSetup creates the database)',
    );
  return url;
}

/**
 * The full app, built by the same createApp as production, on the run's test database (or `url`).
 * Budgets are raised unless a test asks for real ones: supertest sends everything from one IP.
 */
export async function createTestApp(
  env: Record<string, string> = {},
  url: string = testDatabaseUrl(),
): Promise<NestFastifyApplication> {
  const config = loadConfig({
    NODE_ENV: 'test',
    PUBLIC_URL: 'http://formwork.test',
    RATE_LIMIT_CREDENTIAL_PER_MIN: '100000',
    RATE_LIMIT_IP_PER_MIN: '100000',
    DATABASE_POOL_SIZE: '4',
    // Spam defence (issue 47) off the clock and the rates: tests post pages at once, many times, from one IP.
    SPAM_MIN_FILL_MS: '0',
    SPAM_CHALLENGE_FORM_POSTS_PER_MIN: '1000000',
    SPAM_CHALLENGE_IP_POSTS_PER_MIN: '1000000',
    ...env,
  });
  // oidc-provider (ESM-only) cannot load in jest: the OAuth flow is tested against dist/ (test/oauth).
  return createApp(config, url, false, { oauth: false });
}
