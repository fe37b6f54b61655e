/**
 * Imports run one way (issue 11): config/ at the bottom, then common/ and database/, then the
 * features, then the tools layer and the app. `npm run lint:deps` checks these rules in CI.
 * Type-only imports count too (tsPreCompilationDeps): a type is a dependency of the design.
 */
module.exports = {
  forbidden: [
    {
      name: 'config-imports-nothing-of-the-app',
      comment: 'config/ reads and validates the environment; everything else reads config, never the reverse.',
      severity: 'error',
      from: { path: '^src/config/' },
      to: { path: '^src/', pathNot: '^src/config/' },
    },
    {
      name: 'common-and-database-import-no-feature',
      comment:
        'common/ and database/ sit under every feature: a feature that needs to hook into them owns the hook (e.g. its own request.d.ts), common/ does not import it.',
      severity: 'error',
      from: { path: '^src/(common|database)/' },
      to: { path: '^src/', pathNot: '^src/(common|database|config)/' },
    },
    {
      name: 'forms-does-not-import-responses',
      comment:
        'responses/ builds on forms/; what must happen to answers when a form changes is reached through something forms/ owns.',
      severity: 'error',
      from: { path: '^src/forms/' },
      to: { path: '^src/responses/' },
    },
    {
      name: 'domain-rules-do-not-import-tools',
      comment:
        "Only the tool files (*.tool.ts) and their schemas (*.schemas.ts) of a feature know the tools layer; its rules and services do not. (mcp/ is a transport over the tool registry; results/ pages act through the tools' own plan and role rules.)",
      severity: 'error',
      from: { path: '^src/[^/]+/', pathNot: ['^src/(tools|mcp|results)/', '[.](tool|schemas)[.]ts$'] },
      to: { path: '^src/tools/' },
    },
    {
      name: 'migrations-import-nothing-from-src',
      comment: 'A migration replays as it first ran: its SQL is frozen in it, never read from src/, which changes.',
      severity: 'error',
      from: { path: '^migrations/' },
      to: { path: '^src/' },
    },
    {
      name: 'no-circular',
      comment: 'Two modules that need each other: the lower one owns an interface and the higher one implements it.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.d.ts', '.js', '.json'] },
  },
};
