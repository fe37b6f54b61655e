/**
 * One jest run, two kinds of test files:
 *  - unit specs beside the code (src/**\/*.spec.ts; .tsx beside the pages' components), no database;
 *  - e2e specs (test/e2e/*.e2e-spec.ts): the full app in-process, over a real PostgreSQL
 *    (a fresh database per run, migrations applied; the embedded one when no server answers).
 * Code that needs ESM-only packages (the OAuth server) is tested against the built dist/
 * with node --test instead (see README, "Tests").
 */
module.exports = {
  testEnvironment: 'node',
  rootDir: '.',
  roots: ['<rootDir>/src', '<rootDir>/test'],
  testRegex: '(\\.spec|\\.e2e-spec)\\.tsx?$',
  moduleFileExtensions: ['ts', 'tsx', 'js', 'json'],
  transform: { '^.+\\.tsx?$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json', diagnostics: false }] },
  globalSetup: '<rootDir>/test/utils/global-setup.ts',
  globalTeardown: '<rootDir>/test/utils/global-teardown.ts',
  // A built instance (test/utils/cluster.ts) starts in about 4 s here, and took over 20 s on a 2-core machine under load.
  testTimeout: 60000,
  maxWorkers: 2,
};
