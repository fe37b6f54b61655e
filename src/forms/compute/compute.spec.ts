import type { Block } from '../blocks';
import { computeOutcome, normalizeForm } from '../form-logic';
import { arithmetic, Calculator, isCorrect, maxScore } from './evaluate';
import { answerText, recall, recallTokens, recallValues, redirectTarget } from './recall';
import { conditionSql } from '../conditions/sql';

/** The evaluator of forms that compute (issue 46), on forms checked by normalizeForm. */
function form(blocks: Array<Record<string, unknown>>, compute: Record<string, unknown> = {}, hidden: string[] = []) {
  const checked = normalizeForm(blocks as never, [], hidden, [], '/blocks', compute as never);
  if (checked.details.length) throw new Error(JSON.stringify(checked.details));
  return { blocks: checked.blocks, compute: checked.compute };
}
const paths = (blocks: Array<Record<string, unknown>>, compute: Record<string, unknown> = {}, hidden: string[] = []) =>
  normalizeForm(blocks as never, [], hidden, [], '/blocks', compute as never).details.map((d) => d.path);

describe('forms that compute: the evaluator', () => {
  const price = form(
    [
      {
        ref: 'qty',
        type: 'number',
        title: 'How many?',
        calculate: [
          { variable: 'price', op: 'multiply', value: { block: 'qty' } },
          { if: { block: 'qty', op: 'gte', value: 10 }, variable: 'price', op: 'subtract', value: 5 },
          { variable: 'note', op: 'set', value: 'qty ' },
          { variable: 'note', op: 'add', value: { block: 'qty' } },
        ],
      },
      {
        ref: 'split',
        type: 'number',
        title: 'Split?',
        calculate: [{ variable: 'price', op: 'divide', value: { block: 'split' } }],
      },
      {
        ref: 'extra',
        type: 'yes_no',
        title: 'Extra?',
        showIf: { variable: 'price', op: 'gt', value: 20 },
        calculate: [{ variable: 'price', op: 'add', value: 100 }],
      },
    ],
    {
      variables: [
        { name: 'price', type: 'number', initial: 3 },
        { name: 'note', type: 'text' },
      ],
    },
  );
  const ids = Object.fromEntries(price.blocks.map((b) => [b.ref, b.id]));
  const run = (answers: Record<string, unknown>) => computeOutcome(price, answers, {});

  it('runs calculations in path order, with their if; a block not shown adds nothing', () => {
    expect(run({ [ids.qty]: 2 }).variables).toEqual({ price: 6, note: 'qty 2' });
    expect(run({ [ids.qty]: 10 }).variables).toEqual({ price: 125, note: 'qty 10' }); // 30 - 5, shown extra: + 100
    expect(run({ [ids.qty]: 10, [ids.split]: 5 }).variables.price).toBe(5); // 25 / 5 = 5: extra not shown
  });

  it('division by zero leaves the variable as it was and is reported at its path', () => {
    const o = run({ [ids.qty]: 4, [ids.split]: 0 });
    expect(o.variables.price).toBe(12);
    expect(o.problems).toEqual([{ path: '/blocks/1/calculate/0', message: expect.stringContaining('by zero') }]);
  });

  it('keeps numbers finite and text at most 1,000 characters', () => {
    const big = form(
      [
        {
          ref: 'n',
          type: 'number',
          title: 'n',
          calculate: [
            { variable: 'x', op: 'multiply', value: { block: 'n' } },
            { variable: 't', op: 'add', value: 'abcdefghij' },
          ],
        },
      ],
      {
        variables: [
          { name: 'x', type: 'number', initial: 1e308 },
          { name: 't', type: 'text', initial: 'x'.repeat(995) },
        ],
      },
    );
    const o = computeOutcome(big, { [big.blocks[0].id]: 10 }, {});
    expect(o.variables.x).toBe(1e308);
    expect(o.problems).toHaveLength(1);
    expect((o.variables.t as string).length).toBe(1000);
  });

  it('quizzes: points of the choices picked, correct counted (checkboxes: the exact set), 1 point without points; max score', () => {
    const quiz = form([
      { ref: 'a', type: 'multiple_choice', title: 'a', choices: ['x', 'y'], correct: 'y', points: { x: 1, y: 3 } },
      {
        ref: 'b',
        type: 'checkboxes',
        title: 'b',
        choices: ['p', 'q', 'r'],
        correct: ['p', 'r'],
        points: { p: 2, q: -1, r: 2 },
      },
      { ref: 'c', type: 'dropdown', title: 'c', choices: ['u', 'v'], correct: 'u' },
    ]);
    const [a, b, c] = quiz.blocks;
    const ch = (blk: Block, label: string) => blk.choices!.find((x) => x.label === label)!.id;
    expect(maxScore(quiz.blocks)).toBe(3 + 4 + 1);
    const all = computeOutcome(quiz, { [a.id]: ch(a, 'y'), [b.id]: [ch(b, 'p'), ch(b, 'r')], [c.id]: ch(c, 'u') }, {});
    expect(all.variables).toEqual({ score: 8, correctCount: 3 });
    const some = computeOutcome(quiz, { [a.id]: ch(a, 'x'), [b.id]: [ch(b, 'p'), ch(b, 'q'), ch(b, 'r')] }, {});
    expect(some.variables).toEqual({ score: 1 + 3, correctCount: 0 });
    expect(isCorrect(b, [ch(b, 'r'), ch(b, 'p')])).toBe(true);
  });

  it('endings: the jump that goes to one, else the first; none without endings', () => {
    const f = form(
      [
        { ref: 'n', type: 'number', title: 'n', calculate: [{ variable: 'v', op: 'set', value: { block: 'n' } }] },
        { type: 'page_break', jumps: [{ if: { variable: 'v', op: 'gt', value: 5 }, to: 'ending:high' }] },
        { ref: 'm', type: 'short_text', title: 'm' },
      ],
      {
        variables: [{ name: 'v', type: 'number' }],
        endings: [
          { ref: 'low', title: 'Low' },
          { ref: 'high', title: 'High' },
        ],
      },
    );
    expect(computeOutcome(f, { [f.blocks[0].id]: 9 }, {}).ending).toBe('high');
    expect(computeOutcome(f, { [f.blocks[0].id]: 1 }, {}).ending).toBe('low');
  });

  it('arithmetic and the Calculator alone', () => {
    expect([
      arithmetic('add', 1, 2),
      arithmetic('subtract', 1, 2),
      arithmetic('multiply', 3, 2),
      arithmetic('divide', 3, 2),
      arithmetic('set', 3, 2),
    ]).toEqual([3, -1, 6, 1.5, 2]);
    const calc = new Calculator(
      [{ name: 'v', type: 'number', initial: 0 }],
      () => undefined,
      () => undefined,
      () => 0,
    );
    calc.run({
      id: 'b',
      type: 'number',
      title: 't',
      required: false,
      calculate: [{ variable: 'v', op: 'add', value: { block: 'b' } }],
    });
    expect(calc.result()).toEqual({ v: 0 }); // a block not answered: skipped
  });
});

describe('forms that compute: save-time checks', () => {
  const v = [{ name: 'total', type: 'number' }];
  it('names share one namespace; a clash is refused at its path', () => {
    expect(paths([{ ref: 'total', type: 'number', title: 'x' }], { variables: v })).toEqual(['/variables/0/name']);
    expect(paths([], { variables: v }, ['total'])).toEqual(['/variables/0/name']);
    expect(paths([], { variables: [...v, ...v] })).toEqual(['/variables/1/name']);
  });
  it('refuses bad shapes: an unknown field, a bad type, a wrong initial, a bad ending, a bad thank-you', () => {
    expect(paths([], { variables: [{ name: 'a', type: 'date' }] })).toEqual(['/variables/0/type']);
    expect(paths([], { variables: [{ name: 'a', type: 'number', initial: 'x' }] })).toEqual(['/variables/0/initial']);
    expect(paths([], { variables: [{ name: 'a', type: 'number', intial: 1 }] })).toEqual(['/variables/0/intial']);
    expect(paths([], { endings: [{ ref: 'e' }] })).toEqual(['/endings/0/title']);
    expect(paths([], { endings: [{ ref: 'e', title: 'E', redirectUrl: 'ftp://x' }] })).toEqual([
      '/endings/0/redirectUrl',
    ]);
    expect(paths([], { thankYou: { title: '' } })).toEqual(['/thankYou/title']);
  });
  it('a redirect recalls only after its host: never in the scheme, host or port (an open redirect)', () => {
    const at = (redirectUrl: string) => paths([], { endings: [{ ref: 'e', title: 'E', redirectUrl }] }, ['x']);
    for (const bad of [
      'https://{{hidden:x}}/',
      'https://a.com{{hidden:x}}',
      'https://a.com{{hidden:x}}/p',
      'https://a.com:{{hidden:x}}/',
      'https://u{{hidden:x}}@a.com/',
      '{{hidden:x}}://a.com/',
    ])
      expect([bad, at(bad)]).toEqual([bad, ['/endings/0/redirectUrl']]);
    for (const good of [
      'https://a.com/{{hidden:x}}',
      'https://a.com?n={{hidden:x}}',
      'https://a.com:8080/p#{{hidden:x}}',
    ])
      expect([good, at(good)]).toEqual([good, []]);
  });
  it('calculations: only on blocks that take an answer, of declared variables, of the right type, naming blocks up to their own', () => {
    const calc = (c: Record<string, unknown>, type = 'number') =>
      paths(
        [
          { ref: 'a', type, title: 'a', calculate: [c] },
          { ref: 'b', type: 'number', title: 'b' },
        ],
        { variables: [...v, { name: 'label', type: 'text' }] },
      );
    expect(calc({ variable: 'total', op: 'add', value: 1 }, 'statement')).toEqual(['/blocks/0/calculate']);
    expect(calc({ variable: 'totl', op: 'add', value: 1 })).toEqual(['/blocks/0/calculate/0/variable']);
    expect(calc({ variable: 'total', op: 'set', value: 'ten' })).toEqual(['/blocks/0/calculate/0/value']);
    expect(calc({ variable: 'label', op: 'multiply', value: 2 })).toEqual(['/blocks/0/calculate/0/op']);
    expect(calc({ variable: 'total', op: 'add', value: { block: 'b' } })).toEqual([
      '/blocks/0/calculate/0/value/block',
    ]);
    expect(calc({ variable: 'total', op: 'add', value: { block: 'a' } })).toEqual([]);
    expect(calc({ variable: 'total', op: 'add', value: { block: 'a' } }, 'short_text')).toEqual([
      '/blocks/0/calculate/0/value/block',
    ]);
    expect(
      calc({ if: { block: 'a', op: 'answered' }, variable: 'label', op: 'set', value: { block: 'a' } }, 'short_text'),
    ).toEqual([]);
  });
  it('a condition names a variable only after a block that changes it; recall only of what is before', () => {
    const change = { ref: 'c', type: 'number', title: 'c', calculate: [{ variable: 'total', op: 'add', value: 1 }] };
    const cond = { type: 'short_text', title: 'x', showIf: { variable: 'total', op: 'gt', value: 1 } };
    expect(paths([cond, change], { variables: v })).toEqual(['/blocks/0/showIf/variable']);
    expect(paths([change, cond], { variables: v })).toEqual([]);
    expect(paths([{ type: 'short_text', title: '{{variable:total}}' }, change], { variables: v })).toEqual([
      '/blocks/0/title',
    ]);
    expect(paths([change, { type: 'short_text', title: '{{variable:total}} {{c}}' }], { variables: v })).toEqual([]);
    expect(paths([{ type: 'short_text', title: '{{hidden:src}}' }], {}, ['src'])).toEqual([]);
    expect(paths([{ type: 'short_text', title: '{{hidden:scr}}' }], {}, ['src'])).toEqual(['/blocks/0/title']);
  });
});

describe('recall', () => {
  it('finds tokens and substitutes text (encoded for a URL); choices by label, yes/no as Yes/No', () => {
    expect(recallTokens('a {{x}} {{hidden:h}} {{ variable:v }} {{bad token}}').map((t) => [t.kind, t.name])).toEqual([
      ['block', 'x'],
      ['hidden', 'h'],
      ['variable', 'v'],
    ]);
    const blocks = [
      {
        id: 'b1',
        ref: 'pick',
        type: 'checkboxes',
        title: 'p',
        required: false,
        choices: [
          { id: 'c1', label: 'A&B' },
          { id: 'c2', label: 'C' },
        ],
      },
      { id: 'b2', ref: 'ok', type: 'yes_no', title: 'o', required: false },
    ] as Block[];
    const values = recallValues(blocks, { b1: ['c1', 'c2'], b2: true }, { h: '<i>' }, { v: 3 });
    expect(recall('{{pick}} {{ok}} {{hidden:h}} {{variable:v}} {{missing}}', values)).toBe('A&B, C Yes <i> 3 ');
    expect(recall('https://x/?p={{pick}}', values, encodeURIComponent)).toBe('https://x/?p=A%26B%2C%20C');
    expect(answerText(blocks[1], undefined)).toBe('');
  });
  it("a redirect goes only to its template's scheme and host, percent-encoded for a Location header", () => {
    const v = (x: string) => ({ block: () => '', hidden: () => x, variable: () => '' });
    expect(redirectTarget('https://a.com/{{hidden:x}}?q={{hidden:x}}', v('日本 é'))).toBe(
      'https://a.com/%E6%97%A5%E6%9C%AC%20%C3%A9?q=%E6%97%A5%E6%9C%AC%20%C3%A9',
    );
    expect(redirectTarget('https://a.com/日本', v(''))).toBe('https://a.com/%E6%97%A5%E6%9C%AC');
    // Templates saved before the check: a value that moves the host is refused.
    expect(redirectTarget('https://{{hidden:x}}/', v('evil.com'))).toBeUndefined();
    expect(redirectTarget('https://a.com{{hidden:x}}/', v('.evil.com'))).toBeUndefined();
    expect(redirectTarget('https://a.com:{{hidden:x}}/', v('8080'))).toBeUndefined();
    expect(redirectTarget('https://a.com{{hidden:x}}/', v(''))).toBe('https://a.com/');
  });
});

describe('the condition leaf on a variable in SQL (where)', () => {
  it('reads the variables column, NULL on responses of forms that compute nothing', () => {
    const params: unknown[] = [];
    const sql = conditionSql({ variable: 'score', op: 'gte', value: 3 }, params);
    expect(sql).toContain("COALESCE(r.variables, '{}'::jsonb)");
    expect(params).toEqual(['score', 3]);
  });

  it("reads an equals as a containment of the column itself (the variables' GIN index serves it), never NULL", () => {
    const params: unknown[] = [];
    expect(conditionSql({ not: { variable: 'score', op: 'equals', value: 3 } }, params)).toBe(
      '(NOT (r.variables IS NOT NULL AND r.variables @> $1::jsonb))',
    );
    expect(params).toEqual(['{"score":3}']);
  });
});
