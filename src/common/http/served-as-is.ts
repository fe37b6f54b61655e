/**
 * Answers a tool hands out many times as they are (get_form's answer for one version of a form):
 * their JSON is made once, when the answer is, and sent as that text instead of being serialized
 * on every call. The answer is frozen, all the way down, so the text always says what it holds.
 */
const texts = new WeakMap<object, string>();

/** `answer`, frozen, with its JSON kept for jsonServedAsIs. */
export function servedAsIs<T extends object>(answer: T): T {
  texts.set(deepFreeze(answer), JSON.stringify(answer));
  return answer;
}

/** The JSON of an answer made by servedAsIs, or undefined for any other value. */
export function jsonServedAsIs(answer: unknown): string | undefined {
  return typeof answer === 'object' && answer !== null ? texts.get(answer) : undefined;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
