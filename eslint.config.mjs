// Lint for src/, test/, migrations/ and bench/: typescript-eslint's recommended rules, with
// formatting left to Prettier (eslint-config-prettier turns off the rules that would disagree).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import globals from 'globals';

// A transaction owns its connection (src/database/transaction.ts): outside the database layer a
// query never goes to the DataSource directly, where inside a transaction it would wait for a
// second connection (on the embedded database, one session: a freeze). currentManager(db) is the
// transaction's manager when one is open, the pool's otherwise.
const NO_DIRECT_QUERIES = [
  {
    selector:
      "MemberExpression[property.name=/^(manager|query|transaction|getRepository|createQueryRunner|createQueryBuilder)$/][object.property.name='db']",
    message:
      'Use currentManager(this.db) or inTransaction(this.db, ...) (src/database/transaction.ts): a query inside a transaction must use its manager.',
  },
  {
    selector:
      'MemberExpression[property.name=/^(manager|query|transaction|getRepository|createQueryRunner|createQueryBuilder)$/][object.name=/^(db|dataSource)$/]',
    message:
      'Use currentManager(db) or inTransaction(db, ...) (src/database/transaction.ts): a query inside a transaction must use its manager.',
  },
];

// The server-rendered pages are React components: every value is escaped unless it is given as
// raw HTML (dangerouslySetInnerHTML), which only src/common/html.tsx may do.
const NO_RAW_HTML = [
  {
    selector: "JSXAttribute[name.name='dangerouslySetInnerHTML'], Property[key.name='dangerouslySetInnerHTML']",
    message: 'Raw HTML skips escaping (stored XSS): render text as JSX children or attributes instead.',
  },
];

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'data/',
      'coverage/',
      'bench/results/',
      'test-results/',
      'docs/',
      'clients/typescript/src/generated/',
      'clients/*/dist/',
      'clients/*/node_modules/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // `_name` marks a parameter a signature requires but the body does not use.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    ignores: ['src/database/**', '**/*.spec.ts', '**/*.spec.tsx'],
    rules: { 'no-restricted-syntax': ['error', ...NO_DIRECT_QUERIES, ...NO_RAW_HTML] },
  },
  {
    // The page shell's constant style sheet is the one raw HTML of the pages.
    files: ['src/common/html.tsx'],
    rules: { 'no-restricted-syntax': ['error', ...NO_DIRECT_QUERIES] },
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
