import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Browser } from 'playwright-core';
import { createToken, createWorkspace } from '../factories';
import { launchChromium } from './browser';
import { createTestApp } from './create-test-app';

/** What a browser suite drives: the app listening on a port, Chromium, and an admin's token of a Pro workspace. */
export interface BrowserSuite {
  app: NestFastifyApplication;
  browser: Browser;
  /** The app's address, http://127.0.0.1:<port>. */
  base: string;
  token: string;
  /** Where screenshots go (git-ignored). */
  results: string;
}

/**
 * Registers the suite's beforeAll and afterAll: the app started on a free port, Debian's Chromium
 * launched (or a failure saying what to install), a Pro workspace with an admin token. Read the
 * fields inside tests and hooks (they are set once beforeAll has run).
 */
export function browserSuite(env?: Record<string, string>): BrowserSuite {
  const suite = { results: join(__dirname, '../../test-results') } as BrowserSuite;
  beforeAll(async () => {
    suite.app = await createTestApp(env);
    await suite.app.listen(0, '127.0.0.1');
    suite.base = `http://127.0.0.1:${(suite.app.getHttpServer().address() as AddressInfo).port}`;
    suite.browser = await launchChromium();
    const ws = await createWorkspace(suite.app, 'pro');
    suite.token = (await createToken(suite.app, ws, { role: 'admin' })).token;
    mkdirSync(suite.results, { recursive: true });
  });
  afterAll(async () => {
    await suite.browser?.close();
    await suite.app?.close();
  });
  return suite;
}
