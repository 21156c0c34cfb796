// House rules a reviewer would otherwise have to remember, over every tracked file: no source or
// test file over 450 lines (a longer one is split by what it covers), and comments cite what a
// clone holds (docs/spec.md for the spec's rules), never the spec's original numbering as "seed N",
// an issue or session number, or a file outside the repository. A module exports what it defines:
// no re-export (`export … from`, `export { x }`), so an import names the module that holds the thing.
// No function of the product over 60 lines; the product's TypeScript is formatted by prettier
// (.prettierrc.json: 140 columns), and no line of it is longer but for the strings on it.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as ts from "typescript";
import { ROOT } from "../support/cli";

const tracked = spawnSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).stdout.split("\n").filter((f) => f !== "");
const SOURCE = /\.(ts|py|sh|hbs|mjs|cjs)$/;
/** Rendered copies of templates (checked as templates) and the lock file are not written by hand. */
const generated = (f: string) => f.startsWith("test/golden/") || f === "package-lock.json" || f.startsWith("docs/configuration.md") || f.startsWith("docs/fleet.schema.json") || f.startsWith("dashboards/");

/** What a comment must not cite, with why. */
const FORBIDDEN: readonly [RegExp, string][] = [
    [/\b[Ss]eed \d/, "the spec's numbering: cite docs/spec.md §N"],
    [/\b[Tt]he seed\b/, "the spec: cite docs/spec.md"],
    [/(?<!upstream [\w-]+ )\b[Ii]ssues? #?\d+/, "an issue number: say what and why instead"],
    [/\b[Ss]ession \d+/, "development history"],
    [/\bDOMAIN\.md\b|\bSTYLE\.md\b|shared\/seed/, "a file a clone does not hold"],
];

/** A re-export: `export * from`, `export { a } from`, or `export { a }` / `export type { A }` of an import. */
const REEXPORT = /^export (type )?(\*|\{[^}]*\})( from [^;]+)?;/m;

describe("house rules", () => {
    it("no source or test file is over 450 lines", () => {
        const long = tracked
            .filter((f) => SOURCE.test(f) && !generated(f) && fs.existsSync(path.join(ROOT, f)))
            .map((f) => [f, fs.readFileSync(path.join(ROOT, f), "utf8").split("\n").length - 1] as const)
            .filter(([, n]) => n > 450);
        assert.deepEqual(long, []);
    });

    it("no function of the product (components/, status/, policy/, index.ts) is over 60 lines: a longer one is split by what it does", () => {
        const long: string[] = [];
        for (const f of tracked.filter((f) => /^(components|status|policy)\/.*\.ts$|^index\.ts$/.test(f) && fs.existsSync(path.join(ROOT, f)))) {
            const source = ts.createSourceFile(f, fs.readFileSync(path.join(ROOT, f), "utf8"), ts.ScriptTarget.Latest, true);
            const visit = (n: ts.Node): void => {
                if (ts.isFunctionLike(n) && "body" in n && n.body !== undefined) {
                    const [from, to] = [n.getStart(source), n.getEnd()].map((p) => source.getLineAndCharacterOfPosition(p).line);
                    if (to! - from! + 1 > 60) long.push(`${f}:${from! + 1}: ${to! - from! + 1} lines`);
                }
                ts.forEachChild(n, visit);
            };
            visit(source);
        }
        assert.deepEqual(long, []);
    });

    const product = () => tracked.filter((f) => /^(components|status|policy)\/.*\.ts$|^index\.ts$/.test(f) && fs.existsSync(path.join(ROOT, f)));

    it("the product's TypeScript is as prettier formats it (.prettierrc.json)", () => {
        const r = spawnSync(path.join(ROOT, "node_modules/.bin/prettier"), ["--check", ...product()], { cwd: ROOT, encoding: "utf8" });
        assert.equal(r.status, 0, `not formatted (node_modules/.bin/prettier --write <file>):\n${r.stdout}${r.stderr}`);
    });

    it("no line of the product is over 140 characters but for the strings on it (a message is not cut to fit)", () => {
        const long: string[] = [];
        for (const f of product()) {
            const text = fs.readFileSync(path.join(ROOT, f), "utf8");
            const source = ts.createSourceFile(f, text, ts.ScriptTarget.Latest, true);
            // Each character of a string or template literal (its expressions included) is a message's.
            const inString = new Uint8Array(text.length);
            const visit = (n: ts.Node): void => {
                if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) || ts.isTemplateExpression(n)) inString.fill(1, n.getStart(source), n.getEnd());
                else ts.forEachChild(n, visit);
            };
            visit(source);
            let at = 0;
            text.split("\n").forEach((line, i) => {
                const code = [...line].filter((_, k) => inString[at + k] === 0).length;
                if (code > 140) long.push(`${f}:${i + 1}: ${code} characters besides its strings`);
                at += line.length + 1;
            });
        }
        assert.deepEqual(long, []);
    });

    it("no file outside docs/ cites the spec by its old numbering, an issue, a session or a file outside the repository", () => {
        const found: string[] = [];
        for (const f of tracked) {
            if (generated(f) || f.startsWith("docs/") || f === "test/unit/house-rules.test.ts" || !fs.existsSync(path.join(ROOT, f))) continue;
            const text = fs.readFileSync(path.join(ROOT, f));
            if (text.includes(0)) continue; // binary
            text.toString("utf8").split("\n").forEach((line, i) => {
                for (const [re, why] of FORBIDDEN) if (re.test(line)) found.push(`${f}:${i + 1}: ${why}: ${line.trim().slice(0, 120)}`);
            });
        }
        assert.deepEqual(found, []);
    });

    it("no TypeScript module re-exports what another defines", () => {
        const found = tracked
            .filter((f) => f.endsWith(".ts") && /^(components|status|policy)\/|^index\.ts$/.test(f) && fs.existsSync(path.join(ROOT, f)))
            .filter((f) => REEXPORT.test(fs.readFileSync(path.join(ROOT, f), "utf8")))
            .map((f) => `${f}: ${REEXPORT.exec(fs.readFileSync(path.join(ROOT, f), "utf8"))![0]}`);
        assert.deepEqual(found, []);
        for (const line of ['export { HOSTFILES_DIR } from "../base/render";', "export { storagePaths };", "export type { StoragePaths };", 'export * from "./x";'])
            assert.ok(REEXPORT.test(line), line);
        for (const line of ["export const x = 1;", "export type A = string;", "export function f() {}"]) assert.ok(!REEXPORT.test(line), line);
    });

    it("the fault table (hostfiles/faults.json) has one reader in the TypeScript: config/faults.ts", () => {
        const readers = tracked
            .filter((f) => f.endsWith(".ts") && /^(components|status|policy)\/|^index\.ts$/.test(f) && fs.existsSync(path.join(ROOT, f)))
            .filter((f) => /readFileSync\([^)]*"faults\.json"/.test(fs.readFileSync(path.join(ROOT, f), "utf8")));
        assert.deepEqual(readers, ["components/config/faults.ts"]);
    });

    it("on the hosts, the fault table's words reach answers through the diagnosis table alone: no health tool imports the table's reader", () => {
        const importers = tracked
            .filter((f) => f.startsWith("hostfiles/") && !f.startsWith("hostfiles/tests") && f.endsWith(".py") && fs.existsSync(path.join(ROOT, f)))
            .filter((f) => /^\s*(from nodefleet_faults import|import nodefleet_faults)/m.test(fs.readFileSync(path.join(ROOT, f), "utf8")));
        assert.deepEqual(importers, ["hostfiles/nodefleet_health.py"]);
    });

    it("the rules catch what they name", () => {
        const hits = (line: string) => FORBIDDEN.filter(([re]) => re.test(line)).map(([, why]) => why);
        assert.deepEqual(hits("// (seed 7: the error table)"), ["the spec's numbering: cite docs/spec.md §N"]);
        assert.deepEqual(hits("// the gate (issue 42)"), ["an issue number: say what and why instead"]);
        assert.deepEqual(hits("// upstream 0g-storage-node issue 284"), []);
        assert.deepEqual(hits("// docs/spec.md §7"), []);
        assert.deepEqual(hits("consensusSeeds: [seed-1.example.org]"), []);
    });
});
