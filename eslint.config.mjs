// Lint for src/, test/, migrations/ and bench/: typescript-eslint's recommended rules, with
// formatting left to Prettier (eslint-config-prettier turns off the rules that would disagree).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', 'coverage/', 'bench/results/', 'test-results/', 'docs/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // `_name` marks a parameter a signature requires but the body does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // A transaction owns its connection (src/database/transaction.ts): outside the database layer a
    // query never goes to the DataSource directly, where inside a transaction it would wait for a
    // second connection (on the embedded database, one session: a freeze). currentManager(db) is the
    // transaction's manager when one is open, the pool's otherwise.
    files: ['src/**/*.ts'],
    ignores: ['src/database/**', '**/*.spec.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "MemberExpression[property.name=/^(manager|query|transaction|getRepository|createQueryRunner|createQueryBuilder)$/][object.property.name='db']",
          message: 'Use currentManager(this.db) or inTransaction(this.db, ...) (src/database/transaction.ts): a query inside a transaction must use its manager.',
        },
        {
          selector:
            "MemberExpression[property.name=/^(manager|query|transaction|getRepository|createQueryRunner|createQueryBuilder)$/][object.name=/^(db|dataSource)$/]",
          message: 'Use currentManager(db) or inTransaction(db, ...) (src/database/transaction.ts): a query inside a transaction must use its manager.',
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['test/**', '**/*.spec.ts'],
    languageOptions: { globals: { ...globals.jest } },
  },
);
