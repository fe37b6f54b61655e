/**
 * The respondent pages' script and style sheet as files named by their content (issue 52): a page
 * links `/f/assets/respondent.<hash>.js` and `/f/assets/respondent.<hash>.css`, which never change
 * under their name, so a browser or a CDN keeps them for a year without asking again
 * (`immutable`); a new build's files have new names, linked by the pages it serves. The unnamed
 * `/f/assets/respondent.js` stays for pages drawn before (an hour's cache, as before).
 */
import { createHash } from 'node:crypto';
import { STYLE } from '../common/html';
import { RESPONDENT_SCRIPT } from './respondent.script';

/** The Cache-Control of a file named by its content. */
export const IMMUTABLE = 'public, max-age=31536000, immutable';

export interface HashedAsset {
  /** The file's name under /f/assets/. */
  file: string;
  path: string;
  contentType: string;
  body: string;
}

function hashed(name: string, ext: string, body: string, contentType: string): HashedAsset {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  const file = `${name}.${hash}.${ext}`;
  return { file, path: `/f/assets/${file}`, contentType, body };
}

export const PAGE_SCRIPT = hashed('respondent', 'js', RESPONDENT_SCRIPT, 'text/javascript; charset=utf-8');
export const PAGE_STYLE = hashed('respondent', 'css', STYLE, 'text/css; charset=utf-8');

const BY_FILE = new Map([PAGE_SCRIPT, PAGE_STYLE].map((a) => [a.file, a]));

/** The file of that name, or undefined (an older build's, a guess). */
export function hashedAsset(file: string): HashedAsset | undefined {
  return BY_FILE.get(file);
}
