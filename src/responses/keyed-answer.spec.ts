import { AT_SUBMISSION, jsonAroundSubmittedAt, ResponseView } from './responses.service';

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
    [
      "a completed response, its times the submission's own",
      {
        id: 'a4',
        submittedAt: '',
        answers: { b1: '\u0001' },
        hidden: { startedAt: AT_SUBMISSION },
        status: 'completed',
        startedAt: AT_SUBMISSION,
        updatedAt: AT_SUBMISSION,
        lastPage: '',
      },
    ],
  ])('%s: head + submittedAt + tail (AT_SUBMISSION made submittedAt) is the view as JSON', (_label, view) => {
    const { head, tail } = jsonAroundSubmittedAt(view);
    const at_ = (t: string | undefined) => (t === AT_SUBMISSION ? at : t);
    expect(head + at + tail.replaceAll(AT_SUBMISSION, at)).toBe(
      JSON.stringify({ ...view, submittedAt: at, startedAt: at_(view.startedAt), updatedAt: at_(view.updatedAt) }),
    );
  });
});
