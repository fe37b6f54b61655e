/** The quiz of issue 46's tests: ten questions with points and correct answers, a pass mark, two endings. */

/** Ten questions: "Which is n + 1?" with choices n, n+1 (correct, 2 points), n+2 (1 point, a near miss). */
export const QUIZ_QUESTIONS = Array.from({ length: 10 }, (_, n) => ({
  ref: `q${n + 1}`,
  type: 'multiple_choice',
  title: `Question ${n + 1}: what is ${n} + 1?`,
  choices: [String(n), String(n + 1), String(n + 2)],
  correct: String(n + 1),
  points: { [String(n + 1)]: 2, [String(n + 2)]: 1 },
}));

/** The quiz: pass mark 14 of 20; a jump after the questions to the "pass" ending, else "fail" (the first). */
export const QUIZ = {
  title: 'Arithmetic quiz',
  hiddenFields: ['name'],
  blocks: [
    ...QUIZ_QUESTIONS,
    {
      type: 'page_break',
      title: 'Result',
      jumps: [{ if: { variable: 'score', op: 'gte', value: 14 }, to: 'ending:pass' }],
    },
    { ref: 'comment', type: 'short_text', title: 'You scored {{variable:score}}: any comment?' },
  ],
  endings: [
    { ref: 'fail', title: 'Not this time, {{hidden:name}}', message: 'You scored {{variable:score}} of 20.' },
    {
      ref: 'pass',
      title: 'Passed!',
      message: 'You scored {{variable:score}} of 20 ({{variable:correctCount}} right).',
      redirectUrl: 'https://example.com/certificate?score={{variable:score}}&name={{hidden:name}}',
    },
  ],
};

/** What a picked choice per question (0, 1 or 2: n, n+1, n+2; undefined: not answered) scores by hand. */
export function handScore(picks: Array<0 | 1 | 2 | undefined>) {
  let score = 0;
  let correctCount = 0;
  for (const p of picks) {
    if (p === 1) {
      score += 2;
      correctCount += 1;
    } else if (p === 2) score += 1;
  }
  return { score, correctCount, ending: score >= 14 ? 'pass' : 'fail' };
}

export const quizAnswers = (picks: Array<0 | 1 | 2 | undefined>) =>
  Object.fromEntries(picks.flatMap((p, n) => (p === undefined ? [] : [[`q${n + 1}`, String(n + p)]])));
