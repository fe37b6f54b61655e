/**
 * What the demo's text answers are made of; the benchmarks' bulk loads (bench/answers-sql.js)
 * take the same, from the build, so that their responses read like the demo's.
 */
export const SAMPLE_NAMES = [
  'Ada',
  'Grace',
  'Linus',
  'Margaret',
  'Alan',
  'Barbara',
  'Ken',
  'Radia',
  'Dennis',
  'Frances',
];
export const SAMPLE_COMMENTS = [
  'Love it',
  'The API is very clear',
  'More block types please',
  'Summaries saved me hours',
  'Works great with my agent',
];
