/** Issue 39's agent-built branching form: "No" ends it after page 1 (a jump on the break that starts page 2), "Yes" goes on to page 2. Hostile title and choice text. */
export const BRANCHING_FORM = {
  title: 'Team lunch <b>&amp;</b>',
  hiddenFields: ['src'],
  blocks: [
    { ref: 'coming', type: 'yes_no', title: 'Are you coming?', required: true },
    {
      ref: 'p2',
      type: 'page_break',
      title: 'Food',
      jumps: [{ if: { block: 'coming', op: 'equals', value: false }, to: 'end' }],
    },
    {
      ref: 'dish',
      type: 'multiple_choice',
      title: 'Dish <img src=x onerror=alert(1)>',
      choices: ['Pasta', '<i>Salad</i>'],
      required: true,
    },
    { ref: 'notes', type: 'short_text', title: 'Anything else?' },
  ],
};

/**
 * Issue 45's application form: a rating and a scale with end labels, a second page with a required
 * file question (PDF or images, 5 MB, 2 files) and a number; it saves partial responses.
 */
export const APPLICATION_FORM = {
  title: 'Application',
  partialResponses: true,
  blocks: [
    { ref: 'name', type: 'short_text', title: 'Name', required: true },
    { ref: 'stars', type: 'rating', title: 'How was our site?', max: 5, minLabel: 'Poor', maxLabel: 'Great' },
    {
      ref: 'scale',
      type: 'linear_scale',
      title: 'Would you recommend us?',
      min: 0,
      max: 10,
      minLabel: 'Not at all',
      maxLabel: 'Certainly',
    },
    { ref: 'p2', type: 'page_break', title: 'Your CV' },
    {
      ref: 'cv',
      type: 'file_upload',
      title: 'CV',
      required: true,
      accept: ['application/pdf', 'image/*'],
      maxSizeMb: 5,
      maxFiles: 2,
    },
    { ref: 'years', type: 'number', title: 'Years of experience' },
  ],
};
