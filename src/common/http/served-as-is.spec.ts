import { jsonServedAsIs, servedAsIs } from './served-as-is';

describe('servedAsIs', () => {
  it('keeps the JSON of an answer made once, and freezes the answer all the way down', () => {
    const answer = servedAsIs({ title: 'A form', blocks: [{ id: 'b1', choices: [{ label: 'Red' }] }] });
    expect(jsonServedAsIs(answer)).toBe(JSON.stringify(answer));
    expect(() => {
      'use strict';
      (answer.blocks[0].choices[0] as { label: string }).label = 'Blue';
    }).toThrow(TypeError);
    expect(jsonServedAsIs(answer)).toContain('"label":"Red"');
  });

  it('has no JSON for any other answer', () => {
    expect(jsonServedAsIs({ title: 'A form' })).toBeUndefined();
    expect(jsonServedAsIs('text')).toBeUndefined();
    expect(jsonServedAsIs(null)).toBeUndefined();
    expect(jsonServedAsIs(undefined)).toBeUndefined();
  });
});
