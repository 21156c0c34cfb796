// The pack's entry. Pulumi's policy runner registers ts-node to type-check every TypeScript file the
// pack loads, in every preview and up (seconds of CPU each; docs/development.md, "Where a run's CPU
// goes"). The test command type-checks policy/ with the project (tsc), so here that checker is set
// aside and the pack's TypeScript is transpiled only, by swc (the project's tsconfig.json).
process[Symbol.for("ts-node.register.instance")]?.enabled(false);
require("ts-node").register({ project: `${__dirname}/tsconfig.json`, transpileOnly: true, swc: true });
require("./index.ts");
