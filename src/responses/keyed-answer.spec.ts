import { jsonAroundSubmittedAt, ResponseView } from './responses.service';

// A keyed create_response's stored answer is head + submittedAt + tail, written by the insert
// statement; the replay must be byte for byte what the first call sent: JSON.stringify of the view.
describe('jsonAroundSubmittedAt', () => {
  const at = '2026-11-28T08:40:01.123Z';
  it.each<[string, ResponseView]>([
    ['answers only', { id: 'a1', submittedAt: '', answers: { b1: 'x', b2: ['y', 'z'], b3: 4 } }],
    ['hidden values', { id: 'a2', submittedAt: '', answers: {}, hidden: { campaign: 'q"4\u2028' } }],
    [
      'a completed partial',
      { id: 'a3', submittedAt: '', answers: { b1: '"}' }, hidden: {}, startedAt: at, lastPage: 'p2' },
    ],
  ])('%s: head + submittedAt + tail is the view as JSON', (_label, view) => {
    const { head, tail } = jsonAroundSubmittedAt(view);
    expect(head + at + tail).toBe(JSON.stringify({ ...view, submittedAt: at }));
  });
});
