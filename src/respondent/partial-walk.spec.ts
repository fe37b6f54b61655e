import type { Block } from '../forms/blocks';
import type { FormRecord } from '../forms/forms.service';
import { resumeCookie, resumedWalk, resumeSecretOf } from './partial-walk';

const SECRET = 'JmrfDjQhhDcS9WS0pRoUaFvvKbeypZUUgL1jjLgirYA';

function form(blocks: Array<Partial<Block> & Pick<Block, 'id' | 'type'>>, hiddenFields: string[] = []): FormRecord {
  return {
    id: 'f1',
    publicId: 'pub',
    blocks: blocks.map((b) => ({ title: b.id, required: false, ...b })),
    hiddenFields,
    partialResponses: true,
  } as unknown as FormRecord;
}

describe('partial walk (issue 36)', () => {
  it('takes the secret from the link first, else the cookie; anything malformed names nothing', () => {
    expect(resumeSecretOf({ resume: SECRET }, `fw_resume=other${SECRET}`)).toEqual({ secret: SECRET, fromLink: true });
    expect(resumeSecretOf({}, `a=b; fw_resume=${SECRET}`)).toEqual({ secret: SECRET, fromLink: false });
    expect(resumeSecretOf({ resume: '<x>' }, undefined)).toEqual({ secret: undefined, fromLink: true });
    expect(resumeSecretOf({ resume: [SECRET, 'x'] }, undefined).secret).toBe(SECRET);
    expect(resumeSecretOf({}, 'fw_resume=short')).toEqual({ secret: undefined, fromLink: false });
  });

  it('keeps the secret in an HttpOnly, SameSite=Lax cookie of the form’s page, Secure over https, and forgets it', () => {
    expect(resumeCookie('pub', SECRET, true, 30)).toBe(
      `fw_resume=${SECRET}; Path=/f/pub; HttpOnly; SameSite=Lax; Max-Age=2592000; Secure`,
    );
    expect(resumeCookie('pub', undefined, false)).toBe('fw_resume=; Path=/f/pub; HttpOnly; SameSite=Lax; Max-Age=0');
  });

  it('resumes on the page where the person stopped, choices posted by id, answers to removed blocks and undeclared hidden values dropped', () => {
    const f = form(
      [
        { id: 'name', type: 'short_text' },
        {
          id: 'plan',
          type: 'multiple_choice',
          choices: [
            { id: 'c1', label: 'Basic' },
            { id: 'c2', label: 'Family' },
          ],
        },
        {
          id: 'extras',
          type: 'checkboxes',
          choices: [
            { id: 'x1', label: 'Tea' },
            { id: 'x2', label: 'Cake' },
          ],
        },
        { id: 'p2', type: 'page_break' },
        { id: 'n', type: 'number' },
        { id: 'ok', type: 'yes_no' },
        { id: 'p3', type: 'page_break' },
        { id: 'city', type: 'short_text' },
      ],
      ['source'],
    );
    const w = resumedWalk(f, {
      answers: { name: 'Ada', plan: 'Family', extras: ['Cake', 'x1'], n: 3, ok: false, gone: 'x' },
      hidden: { source: 'mail', other: 'y' },
      pagesReached: ['', 'p2'],
      lastPage: 'p2',
    });
    expect(w.a).toEqual({ name: 'Ada', plan: 'c2', extras: ['x2', 'x1'], n: '3', ok: 'false' });
    expect(w.h).toEqual({ source: 'mail' });
    expect(w.s).toEqual(['', 'p2']);
    expect(w.page.key).toBe('p2');
  });

  it('re-checks the path: a last page the answers no longer lead to resumes on the furthest page reached still on it', () => {
    const f = form([
      { id: 'go', type: 'yes_no' },
      { id: 'p2', type: 'page_break', showIf: { block: 'go', op: 'equals', value: true } },
      { id: 'a', type: 'short_text' },
      { id: 'p3', type: 'page_break' },
      { id: 'b', type: 'short_text' },
    ]);
    const w = resumedWalk(f, { answers: { go: false }, hidden: {}, pagesReached: ['', 'p2'], lastPage: 'p2' });
    expect(w.s).toEqual(['']);
    expect(w.page.key).toBe('');
    const gone = resumedWalk(f, { answers: {}, hidden: {}, pagesReached: ['', 'p3'], lastPage: 'removed' });
    expect(gone.s).toEqual(['', 'p3']);
  });
});
