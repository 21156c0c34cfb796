/**
 * Import rules of nodefleet's own TypeScript (docs/development.md, Layers); the unit tier runs them.
 * Every file of components/ sits in a folder named for its layer, and each layer may import only
 * the layers below it (and itself). From the bottom:
 *   base (templates and quoting, address math) -> config (the schema, its checks and the port and
 *   hardware tables) -> hosts -> health (the role contracts) -> monitoring, rollout (side by side,
 *   neither imports the other) -> roles -> fleet (composes the fleet; shards, the generated docs);
 * status/, policy/ and index.ts above components/. No exception, and no circle.
 */
const LAYERS = [
    ["base", [], "templates, quoting and address math: nodefleet's bottom, importing nothing of it"],
    ["config", ["base"], "the config and the tables it is checked against"],
    ["hosts", ["base", "config"], "connects, bootstraps and bundles tools for any role; knows no role, health check, monitoring or rollout"],
    ["health", ["base", "config", "hosts"], "the role contracts monitoring, rollout and the roles read"],
    ["monitoring", ["base", "config", "hosts", "health"], "takes what it needs from health/, never from a role's component or the rollout"],
    ["rollout", ["base", "config", "hosts", "health"], "the gates take what they need from health/, never from a role's component or monitoring"],
    ["roles", ["base", "config", "hosts", "health", "rollout"], "a role's components; the fleet composes them, a role never imports the fleet or monitoring"],
    ["fleet", ["base", "config", "hosts", "health", "monitoring", "rollout", "roles"], "composes everything below it"],
];
const folders = LAYERS.map(([name]) => name);

module.exports = {
    forbidden: [
        {
            name: "no-circular",
            severity: "error",
            comment: "A circle of imports: a module that needs another which needs it back. Move what both need into a lower module.",
            from: {},
            to: { circular: true },
        },
        {
            name: "components-below-entry-points",
            severity: "error",
            comment: "components/ is what status/, policy/ and index.ts build on; it never imports them.",
            from: { path: "^components/" },
            to: { path: "^(status/|policy/|index\\.ts$)" },
        },
        {
            name: "components-in-layer-folders",
            severity: "error",
            comment: `Every file of components/ sits in the folder of its layer (${folders.join(", ")}).`,
            from: { path: "^components/", pathNot: `^components/(${folders.join("|")})/` },
            to: {},
        },
        ...LAYERS.map(([name, below, what]) => ({
            name: `${name}-imports-only-below`,
            severity: "error",
            comment: `components/${name}/: ${what}. It imports only ${below.length ? below.map((b) => `${b}/`).join(", ") : "nothing of components/ but itself"}.`,
            from: { path: `^components/${name}/` },
            to: { path: "^components/", pathNot: `^components/(${[name, ...below].join("|")})/` },
        })),
    ],
    options: {
        doNotFollow: { path: "node_modules" },
        exclude: { path: "^(node_modules|dist|test/cli/policy-fixture)" },
        tsConfig: { fileName: "tsconfig.json" },
        tsPreCompilationDeps: true,
    },
};
