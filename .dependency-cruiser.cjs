/**
 * Module boundaries (issue 13, docs/architecture.md). `npm run lint` runs this over src/.
 * - A module (src/modules/<m>/) is used by other modules only through its public entry,
 *   src/modules/<m>/index.ts. Table files (*.table.ts) may import other modules' table files
 *   (foreign keys); repositories (*.repo.ts) may import them too, to JOIN along those foreign keys
 *   in one query (a list of members with their names, a visibility subquery). A repository never
 *   imports another module's repository, and writes only its own module's tables (review: the tool
 *   cannot tell a read from a write). Tests are exempt; so is the composition root (src/*.ts,
 *   src/db/), which wires every module's factories and routes.
 * - No cycles between modules (folder level: a ↔ b through any files, tables included). The layers,
 *   lowest first: users; workspaces; models, auth, teams; agents, billing, invitations; chats,
 *   documents, speech; ingestion, knowledge-bases, messages. A lower module needing a higher
 *   one's data receives a function through its factory in src/deps.ts.
 * - src/platform/ (ports, adapters, generic helpers) knows no module.
 */
const MODULE = '^src/modules/([^/]+)/';
const TEST = '\\.test\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-module-cycles',
      comment: 'Two modules that import each other are one module in two folders: move the shared part or pass a capability in deps.ts.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/modules/[^/]+$' },
      to: { path: '^src/modules/[^/]+$', circular: true, viaOnly: { path: '^src/modules/[^/]+$' } },
    },
    {
      name: 'no-reach-in',
      comment: "Use the other module's public API (src/modules/<m>/index.ts), or receive a narrow capability through the factory in src/deps.ts.",
      severity: 'error',
      from: { path: MODULE, pathNot: [TEST, '\\.table\\.ts$', '\\.repo\\.ts$'] },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'no-reach-in-from-repos',
      comment: "A repository may JOIN other modules' tables (foreign keys) and use public entries; never another module's repository.",
      severity: 'error',
      from: { path: `${MODULE}.+\\.repo\\.ts$` },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$', '\\.table\\.ts$'] },
    },
    {
      name: 'no-reach-in-from-tables',
      comment: "Table files may reference other modules' tables (foreign keys) and public entries, nothing else.",
      severity: 'error',
      from: { path: `${MODULE}.+\\.table\\.ts$` },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$', '\\.table\\.ts$'] },
    },
    {
      name: 'platform-knows-no-module',
      comment: 'src/platform/ holds ports, adapters and generic helpers; modules depend on it, never the reverse.',
      severity: 'error',
      from: { path: '^src/platform/', pathNot: TEST },
      to: { path: '^src/modules/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Tests may use any module's internals (they are not part of the graph).
    exclude: { path: ['\\.d\\.ts$', '\\.test\\.ts$'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js', '.json'] },
    reporterOptions: {
      archi: { collapsePattern: '^src/modules/[^/]+|^src/platform|^src/(config|db)' },
    },
  },
};
