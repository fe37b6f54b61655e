/**
 * The ALTCHA widget (the altcha package), served by Formwork itself from its own origin: no third
 * party, and the pages' CSP holds (script-src 'self'; its styles are inline, as the pages' are).
 * Its "external" build loads no worker of its own: the proof of work runs in the PBKDF2 worker
 * served beside it (worker-src 'self'), registered at the end of the script.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const ALTCHA_SCRIPT_PATH = '/f/assets/altcha.js';
export const ALTCHA_WORKER_PATH = '/f/assets/altcha-worker.js';

let files: { script: string; worker: string } | undefined;

/** The widget's script (read once) and the worker it runs the work in. */
export function altchaAssets(): { script: string; worker: string } {
  if (files) return files;
  // The package's main entry is dist/main/…; its other builds are beside it.
  const dist = join(dirname(require.resolve('altcha')), '..');
  const register = `\n;globalThis.$altcha.algorithms.set('PBKDF2/SHA-256', () => new Worker(${JSON.stringify(ALTCHA_WORKER_PATH)}));\n`;
  files = {
    script: readFileSync(join(dist, 'external', 'altcha.umd.min.cjs'), 'utf8') + register,
    worker: readFileSync(join(dist, 'workers', 'pbkdf2.js'), 'utf8'),
  };
  return files;
}
