/**
 * The respondent page's own words in English: the catalogue every other language must match key
 * for key (words.spec.ts). ICU MessageFormat (@messageformat/core): `{name}` is a value,
 * `{n, plural, one {…} other {…}}` chooses by the language's plural rules, `#` is the count.
 */
export const en = {
  submit: 'Submit',
  next: 'Next',
  back: 'Back',
  saveLater: 'Save and finish later',
  progress: 'Page {position} of {total}',
  requiredNote: 'Questions marked {mark} are required.',
  savedAsYouGo: 'Your answers are saved as you go on this device.',
  problems:
    '{count, plural, one {There is a problem with your answers} other {There are # problems with your answers}}',
  needsAnswer: 'This question needs an answer.',
  yes: 'Yes',
  no: 'No',
  thankYou: 'Thank you!',
  thankYouTitle: 'Thank you',
  received: 'Your answers to “{title}” were received.',
  continue: 'Continue',
  rankTop: 'Choose your top {count}: 1 is the best.',
  rankAll: 'Give each option a place: 1 is the best.',
  language: 'Language',
  uploadedFiles: 'Uploaded files',
  keepFile: 'Keep {name}',
  anyFile: 'Any type of file.',
  acceptedFiles: 'Accepted: {types}.',
  fileLimit: '{max, plural, one {Up to {mb} MB.} other {Up to {mb} MB each; at most # files.}}',
  leaveEmpty: 'Leave this empty',
  spamNoScript:
    'This form checks that answers come from a person with a short computation in your browser, which needs JavaScript. Without it, your answers are kept for the form’s owner to review.',
  turnedSubmit: 'Your answers end the form on this page: the button now submits them.',
  turnedNext: 'The form goes on after this page: the button now says Next.',
  choose: 'Choose…',
  removeFile: 'Remove',
};

export type PageWordKey = keyof typeof en;
export type Catalogue = Record<PageWordKey, string>;
