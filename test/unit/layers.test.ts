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

    it("a host module importing a role's component fails, named", () => {
        const dir = scratch((d) => fs.appendFileSync(path.join(d, "components/hosts/names.ts"), '\nimport "../roles/storage";\n'));
        try {
            const r = cruise(dir);
            assert.notEqual(r.status, 0);
            assert.match(r.output, /hosts-below-roles: components\/hosts\/names\.ts → components\/roles\/storage\.ts/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
