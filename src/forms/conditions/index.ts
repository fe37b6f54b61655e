/** The condition language (see condition.types.ts): schema, save-time check, evaluator. */
export * from './condition.types';
export * from './check';
export * from './evaluate';
export * from './condition.schema';
