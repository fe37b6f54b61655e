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
