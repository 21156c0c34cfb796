// The roles' registry (components/roles/registry.ts; docs/development.md, Layers): each role is a
// folder of components/roles/ with its contract, the registry lists every folder, nothing outside
// the role folders branches on a role's name, and a made-up role added to the registry in a scratch
// copy is refused by the real TypeScript compiler, naming every table it must fill.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT } from "../support/cli";
import { CONTRACTS, ROLES } from "../../components/roles/registry";

const ROLES_DIR = path.join(ROOT, "components", "roles");

/** The TypeScript and JavaScript files under `dir` (relative to ROOT). */
function sources(dir: string): string[] {
    const abs = path.join(ROOT, dir);
    if (fs.statSync(abs).isFile()) return [dir];
    return fs.readdirSync(abs, { withFileTypes: true }).flatMap((e) => {
        const rel = path.join(dir, e.name);
        if (e.isDirectory()) return sources(rel);
        return /\.(ts|mjs|js)$/.test(e.name) ? [rel] : [];
    });
}

/** The members a role's contract must give (RoleContract's members without `?`), read from its declaration. */
function requiredMembers(): string[] {
    const text = fs.readFileSync(path.join(ROLES_DIR, "contract.ts"), "utf8");
    const body = /export interface RoleContract<[^>]*> \{\n([\s\S]*?)\n\}/.exec(text)?.[1] ?? "";
    return [...body.matchAll(/^ {4}(?:readonly )?([a-zA-Z]+)(\??)[:(]/gm)].filter((m) => m[2] === "").map((m) => m[1]!);
}

describe("the roles' registry", () => {
    it("lists every role folder, each with its contract, in the folder of its name", () => {
        const folders = fs.readdirSync(ROLES_DIR, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
        assert.deepEqual([...folders].sort(), ROLES.map((r) => r.role).sort());
        for (const role of folders) assert.ok(fs.existsSync(path.join(ROLES_DIR, role, "contract.ts")), `${role}/contract.ts`);
        for (const c of CONTRACTS) assert.match(c.componentType, /^nodefleet:role:[A-Z][A-Za-z]+Node$/, c.role);
    });

    it("nothing outside the role folders branches on a role's name", () => {
        const names = ROLES.map((r) => r.role).join("|");
        const branch = new RegExp(`(===|!==)\\s*["'](${names})["']|["'](${names})["']\\s*(===|!==)|case\\s+["'](${names})["']`);
        const files = ["index.ts", "components", "status", "policy", "scripts"].flatMap(sources).filter((f) => !f.startsWith(path.join("components", "roles") + path.sep));
        assert.ok(files.length > 60, `${files.length} files read`);
        const found = files.flatMap((f) =>
            fs
                .readFileSync(path.join(ROOT, f), "utf8")
                .split("\n")
                .flatMap((line, i) => (branch.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
        );
        assert.deepEqual(found, []);
    });

    it("a made-up role added to the registry in a copy: the compiler names every table it must fill", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-roles-"));
        try {
            for (const f of ["components", "hostfiles", "tsconfig.json"]) fs.cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true });
            fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
            fs.mkdirSync(path.join(dir, "components/roles/archive"));
            fs.writeFileSync(
                path.join(dir, "components/roles/archive/contract.ts"),
                [
                    'import { z } from "zod";',
                    'import { roleNode, type RoleContract } from "../contract";',
                    'export const archiveNode = roleNode("archive", { role: "An archive node.", node: "An archive node." }, z.strictObject({}));',
                    "export const archiveRole = { role: \"archive\", node: archiveNode } satisfies RoleContract<z.infer<typeof archiveNode>>;",
                    "",
                ].join("\n"),
            );
            const registry = path.join(dir, "components/roles/registry.ts");
            const text = fs.readFileSync(registry, "utf8");
            const line = /^export const ROLES = \[(.*)\] as const;$/m;
            assert.match(text, line, "the registry's line");
            fs.writeFileSync(registry, `${text.replace(line, "export const ROLES = [$1, archiveRole] as const;")}\nimport { archiveRole } from "./archive/contract";\n`);
            fs.writeFileSync(path.join(dir, "tsconfig.scratch.json"), JSON.stringify({ extends: "./tsconfig.json", compilerOptions: { noEmit: true }, include: ["components/**/*.ts"] }));
            const r = spawnSync(path.join(ROOT, "node_modules/.bin/tsc"), ["-p", "tsconfig.scratch.json"], { cwd: dir, encoding: "utf8", timeout: 120_000 });
            assert.notEqual(r.status, 0, "the copy compiles with an empty role");
            const out = r.stdout.replace(/\r/g, "");
            const errors = out.split("\n").filter((l) => /^components\/.*error TS/.test(l)).map((l) => l.split("(")[0]);
            // The contract, the components' table, and the registry's view of every contract.
            assert.deepEqual([...new Set(errors)].sort(), ["components/roles/archive/contract.ts", "components/roles/nodes.ts", "components/roles/registry.ts"], out.slice(0, 4000));
            assert.match(out, /components\/roles\/nodes\.ts.*Property 'archive' is missing/, "the component builders' table");
            // tsc names up to four missing members and counts the rest: every required member.
            const missing = /archive\/contract\.ts[^\n]*\n[^\n]*is missing the following properties from type 'RoleContract<[^\n]*>': ([^\n]*)\./.exec(out);
            assert.ok(missing, out.slice(0, 4000));
            const listed = missing[1]!.replace(/, and \d+ more$/, "").split(", ");
            const more = Number(/, and (\d+) more$/.exec(missing[1]!)?.[1] ?? 0);
            const required = requiredMembers();
            assert.ok(required.length >= 12, `${required.length} required members read: ${required.join(", ")}`);
            for (const m of listed) assert.ok(required.includes(m), `${m} is a required member`);
            assert.equal(listed.length + more, required.length - 2, `every member but role and node: ${required.join(", ")}`);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
