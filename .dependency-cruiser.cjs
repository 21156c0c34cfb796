/**
 * Import rules of nodefleet's own TypeScript (docs/development.md, Layers); the unit tier runs them.
 * From the bottom: config (and the pure tables beside it: ports, hardware, cidr, firewall, render)
 * -> hosts -> health (the role contracts: where each node lives, its health command) -> monitoring
 * and rollout -> roles -> fleet; status/, policy/ and index.ts above components/. Nothing imports
 * a layer above its own, and nothing imports in a circle.
 */
const above = (...dirs) => `^components/(${dirs.join("|")})`;
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
            name: "config-is-the-bottom",
            severity: "error",
            comment: "The config (and the pure tables it checks against) imports no layer above it.",
            from: { path: "^components/(config/|ports\\.ts|hardware\\.ts|cidr\\.ts|firewall\\.ts|render\\.ts)" },
            to: { path: `${above("hosts", "health", "monitoring", "rollout", "roles")}/|^components/(fleet|shards|sdk|reference)\\.ts$` },
        },
        {
            name: "hosts-below-roles",
            severity: "error",
            comment: "hosts/ connects, bootstraps and bundles tools for any role; it knows no role, health check, monitoring or rollout.",
            from: { path: "^components/hosts/" },
            to: { path: `${above("health", "monitoring", "rollout", "roles")}/|^components/(fleet|shards|sdk|reference)\\.ts$` },
        },
        {
            name: "health-below-its-readers",
            severity: "error",
            comment: "health/ holds the role contracts monitoring, rollout and the roles read; it imports none of them.",
            from: { path: "^components/health/" },
            to: { path: `${above("monitoring", "rollout", "roles")}/|^components/(fleet|shards|sdk|reference)\\.ts$` },
        },
        {
            name: "monitoring-and-rollout-below-roles",
            severity: "error",
            comment: "Monitoring and the rollout gates take what they need from health/, never from a role's component.",
            from: { path: "^components/(monitoring|rollout)/" },
            to: { path: `${above("roles")}/|^components/(fleet|shards|sdk)\\.ts$` },
        },
        {
            name: "roles-below-the-fleet",
            severity: "error",
            comment: "The fleet composes the roles; a role never imports the fleet.",
            from: { path: "^components/roles/" },
            to: { path: "^components/(fleet|shards|sdk|reference)\\.ts$" },
        },
    ],
    options: {
        doNotFollow: { path: "node_modules" },
        exclude: { path: "^(node_modules|dist|test/cli/policy-fixture)" },
        tsConfig: { fileName: "tsconfig.json" },
        tsPreCompilationDeps: true,
    },
};
