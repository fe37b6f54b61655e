import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../config/config';
import { GENERATED_KEY_FILE, SealedSecretError, WebhookSecretBox, webhookSecretBox } from './secret-box';
import { newSecret } from './signing';

const key = (fill: number) => Buffer.alloc(32, fill);

describe('webhook secrets at rest', () => {
  const secret = newSecret();

  it('seals with AES-256-GCM under the current key: no trace of the secret, a fresh nonce each time', () => {
    const box = new WebhookSecretBox([key(1)]);
    const sealed = box.seal(secret);
    expect(sealed.startsWith(box.currentPrefix)).toBe(true);
    expect(sealed).toMatch(/^fwse1:[0-9a-f]{8}:[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(secret);
    expect(sealed).not.toContain(secret.slice('whsec_'.length));
    expect(box.seal(secret)).not.toBe(sealed);
    expect(box.open(sealed)).toBe(secret);
  });

  it('reads a secret stored before encryption as it is', () => {
    expect(new WebhookSecretBox([key(1)]).open(secret)).toBe(secret);
  });

  it('opens with a previous key and seals with the current one; without the key nothing opens', () => {
    const sealedOld = new WebhookSecretBox([key(1)]).seal(secret);
    const rotated = new WebhookSecretBox([key(2), key(1)]);
    expect(rotated.open(sealedOld)).toBe(secret);
    expect(sealedOld.startsWith(rotated.currentPrefix)).toBe(false);
    expect(rotated.seal(secret).startsWith(rotated.currentPrefix)).toBe(true);
    // The key dropped (or a copy of the database alone): the value is useless.
    expect(() => new WebhookSecretBox([key(2)]).open(sealedOld)).toThrow(SealedSecretError);
    expect(() => new WebhookSecretBox([key(2)]).open(sealedOld)).toThrow(/neither WEBHOOK_SECRET_KEY nor/);
  });

  it('refuses a stored value that was changed (the tag does not verify)', () => {
    const box = new WebhookSecretBox([key(1)]);
    const sealed = box.seal(secret);
    const last = sealed.at(-2) === 'A' ? 'B' : 'A';
    const changed = `${sealed.slice(0, -2)}${last}${sealed.at(-1)}`;
    expect(() => box.open(changed)).toThrow(/does not open: the stored value was changed/);
  });

  describe('without WEBHOOK_SECRET_KEY (outside production)', () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'fw-webhook-key-'))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('makes a key once in DATA_DIR, readable by its owner only, and keeps using it', () => {
      const config = loadConfig({ NODE_ENV: 'development', DATA_DIR: dir });
      const sealed = webhookSecretBox(config).seal(secret);
      const file = join(dir, GENERATED_KEY_FILE);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')).toHaveLength(32);
      expect(webhookSecretBox(config).open(sealed)).toBe(secret);
    });

    it('refuses a key file that was damaged, rather than making another', () => {
      writeFileSync(join(dir, GENERATED_KEY_FILE), 'not a key\n');
      expect(() => webhookSecretBox(loadConfig({ NODE_ENV: 'development', DATA_DIR: dir }))).toThrow(
        /does not hold the base64 of 32 bytes/,
      );
    });

    it('uses WEBHOOK_SECRET_KEY when it is set, and makes no file', () => {
      const env = { NODE_ENV: 'development', DATA_DIR: dir, WEBHOOK_SECRET_KEY: key(3).toString('base64') };
      const sealed = webhookSecretBox(loadConfig(env)).seal(secret);
      expect(new WebhookSecretBox([key(3)]).open(sealed)).toBe(secret);
      expect(() => statSync(join(dir, GENERATED_KEY_FILE))).toThrow();
    });
  });
});
