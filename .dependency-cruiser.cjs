/**
 * Import rules of nodefleet's own TypeScript (docs/development.md, Layers); the unit tier runs them.
 * Every file of components/ sits in a folder named for its layer, and each layer may import only
 * the layers below it (and itself). From the bottom:
 *   base (templates, quoting, address math, the host layout) -> values (the config's value checks
 *   and building blocks) -> contracts (each role's contract.ts in its folder of roles/, the kit
 *   they share and the registry that lists them) -> config (the schema, its checks and the port and
 *   hardware tables) -> hosts -> health -> monitoring, rollout (side by side, neither imports the
 *   other) -> roles (a role's components, in its folder) -> fleet (composes the fleet; shards, the
 *   generated docs); status/, policy/ and index.ts above components/. No exception, and no circle.
 */
const CONTRACTS = "roles/(contract|registry|[a-z-]+/contract)\\.ts$";
const LAYERS = [
    ["base", "base/", [], "templates, quoting, address math and the host layout: nodefleet's bottom, importing nothing of it"],
    ["values", "values/", ["base"], "the config's value checks and zod building blocks"],
    ["contracts", CONTRACTS, ["base", "values"], "what each role tells the layers beneath its components: data and small functions, no component"],
    ["config", "config/", ["base", "values", "contracts"], "the config and the tables it is checked against"],
    ["hosts", "hosts/", ["base", "values", "contracts", "config"], "connects, bootstraps and bundles tools for any role; knows no role's component, health check, monitoring or rollout"],
    ["health", "health/", ["base", "values", "contracts", "config", "hosts"], "the health steps monitoring, rollout and the roles read"],
    ["monitoring", "monitoring/", ["base", "values", "contracts", "config", "hosts", "health"], "takes what it needs from health/, never from a role's component or the rollout"],
    ["rollout", "rollout/", ["base", "values", "contracts", "config", "hosts", "health"], "the gates take what they need from health/, never from a role's component or monitoring"],
    ["roles", "roles/", ["base", "values", "contracts", "config", "hosts", "health", "rollout"], "a role's components; the fleet composes them, a role never imports the fleet or monitoring"],
    ["fleet", "fleet/", ["base", "values", "contracts", "config", "hosts", "health", "monitoring", "rollout", "roles"], "composes everything below it"],
];
const where = Object.fromEntries(LAYERS.map(([name, path]) => [name, path]));
const folders = LAYERS.filter(([, path]) => path.endsWith("/")).map(([name]) => name);

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
        ...LAYERS.map(([name, path, below, what]) => ({
            name: `${name}-imports-only-below`,
            severity: "error",
            comment: `components/${path}: ${what}. It imports only ${below.length ? below.map((b) => where[b]).join(", ") : "nothing of components/ but itself"}.`,
            // A folder's rule leaves out the files of a layer inside it (the contracts in roles/).
            from: { path: `^components/${path}`, ...(path === "roles/" ? { pathNot: `^components/${CONTRACTS}` } : {}) },
            to: { path: "^components/", pathNot: `^components/(${[path, ...below.map((b) => where[b])].join("|")})` },
        })),
    ],
    options: {
        doNotFollow: { path: "node_modules" },
        exclude: { path: "^(node_modules|dist|test/cli/policy-fixture)" },
        tsConfig: { fileName: "tsconfig.json" },
        tsPreCompilationDeps: true,
    },
};
