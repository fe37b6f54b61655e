/** Forms that compute (issue 46): see compute.types.ts. */
export * from './compute.types';
export * from './compute.schema';
export * from './check';
export * from './evaluate';
export * from './recall';
