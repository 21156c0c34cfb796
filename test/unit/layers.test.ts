// The import rules of .dependency-cruiser.cjs (docs/development.md, Layers), run by the real
// dependency-cruiser: the project's own TypeScript has no circle and imports no layer above its
// own; and a circle or an upward import put into a scratch copy is found and named.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT } from "../support/cli";

const CRUISE = path.join(ROOT, "node_modules", ".bin", "depcruise");
const SOURCES = ["index.ts", "components", "status", "policy"];

function cruise(cwd: string) {
    const r = spawnSync(CRUISE, ["--config", ".dependency-cruiser.cjs", "--output-type", "err", ...SOURCES], { cwd, encoding: "utf8", timeout: 120_000 });
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** A scratch copy of the sources the rules read, with `edit` applied to it. */
function scratch(edit: (dir: string) => void): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-layers-"));
    for (const f of [...SOURCES, "tsconfig.json", ".dependency-cruiser.cjs"]) fs.cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true });
    fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
    edit(dir);
    return dir;
}

describe("layers", () => {
    it("the project's TypeScript keeps every import rule: no circle, no import upward", () => {
        const r = cruise(ROOT);
        assert.equal(r.status, 0, r.output);
    });

    it("every file of components/ sits in the folder of a layer the rules name", () => {
        const rules = (require(path.join(ROOT, ".dependency-cruiser.cjs")) as { forbidden: { name: string; from: { path?: string } }[] }).forbidden;
        const layers = rules.filter((r) => r.name.endsWith("-imports-only-below")).map((r) => r.from.path!);
        const folders = layers.map((p) => /^\^components\/([a-z]+)\/$/.exec(p)?.[1]).filter((n): n is string => n !== undefined);
        const entries = fs.readdirSync(path.join(ROOT, "components"), { withFileTypes: true });
        assert.deepEqual(entries.filter((e) => !e.isDirectory()).map((e) => e.name), [], "files outside a layer's folder");
        assert.deepEqual(entries.map((e) => e.name).sort(), [...folders].sort(), "the folders of components/ and the layers of the rules");
        // A layer that is not a folder of its own is files inside one (the roles' contracts in roles/).
        for (const p of layers.filter((p) => !/\/$/.test(p))) assert.ok(folders.some((f) => p.startsWith(`^components/${f}/`)), p);
    });

    it("a circle put into a copy fails, named with its modules", () => {
        const dir = scratch((d) => fs.appendFileSync(path.join(d, "components/config/plan.ts"), '\nimport "./fleet";\n'));
        try {
            const r = cruise(dir);
            assert.notEqual(r.status, 0);
            assert.match(r.output, /no-circular: components\/config\/(plan|fleet)\.ts/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    // Every other rule, shown to fail: one copy with a violation of each planted in it, each in a
    // file of its own so that each finding names its plant (the plants make circles too).
    const PLANTS: [rule: string, file: string, spec: string, target: string][] = [
        ["components-below-entry-points", "components/fleet/sdk.ts", "../../status/diagnose", "status/diagnose.ts"],
        ["components-in-layer-folders", "components/loose.ts", "./base/cidr", "components/base/cidr.ts"],
        ["base-imports-only-below", "components/base/cidr.ts", "../values/bls12381", "components/values/bls12381.ts"],
        ["values-imports-only-below", "components/values/bls12381.ts", "../roles/registry", "components/roles/registry.ts"],
        ["contracts-imports-only-below", "components/roles/storage/contract.ts", "../../config/strings", "components/config/strings.ts"],
        ["config-imports-only-below", "components/config/strings.ts", "../hosts/names", "components/hosts/names.ts"],
        ["hosts-imports-only-below", "components/hosts/names.ts", "../roles/prelude", "components/roles/prelude.ts"],
        ["health-imports-only-below", "components/health/checks.ts", "../monitoring/fault-meanings", "components/monitoring/fault-meanings.ts"],
        ["monitoring-imports-only-below", "components/monitoring/fault-meanings.ts", "../rollout/power", "components/rollout/power.ts"],
        ["rollout-imports-only-below", "components/rollout/power.ts", "../monitoring/dashboard", "components/monitoring/dashboard.ts"],
        ["roles-imports-only-below", "components/roles/urls.ts", "../fleet/sdk", "components/fleet/sdk.ts"],
        ["fleet-imports-only-below", "components/fleet/shards.ts", "../loose", "components/loose.ts"],
    ];

    it("every rule fails on a violation planted in a copy, naming the import", () => {
        const dir = scratch((d) => {
            for (const [, file, spec] of PLANTS) fs.appendFileSync(path.join(d, file), `\nimport "${spec}";\n`);
        });
        try {
            const r = cruise(dir);
            assert.notEqual(r.status, 0);
            const rules = (require(path.join(ROOT, ".dependency-cruiser.cjs")) as { forbidden: { name: string }[] }).forbidden.map((x) => x.name);
            assert.deepEqual(["no-circular", ...PLANTS.map(([rule]) => rule)].sort(), [...rules].sort(), "a plant for every rule");
            for (const [rule, file, , target] of PLANTS) assert.ok(r.output.includes(`${rule}: ${file} → ${target}`), `${rule}: ${file} → ${target}`);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
