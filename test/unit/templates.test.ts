// The template lint: every value interpolated into a rendered host file goes through the quoting
// helper of its context (components/base/render.ts QUOTING_HELPERS). It parses every template with
// Handlebars' own parser and fails on a plain {{value}} or a helper that does not quote, except
// the short allow-list below, each entry with its reason. Which helper fits which context is
// checked by the golden files and their real validators, and by the hostile-value tests below.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import Handlebars from "handlebars";
import { commentText, doubleQuoted, envFileValue, heredocBody, integer, QUOTING_HELPERS, TEMPLATES_DIR, templateFiles, unitValue } from "../../components/base/render";
import { spawnSync } from "node:child_process";

/** template → expression → why it needs no quoting helper. */
const ALLOWED: Record<string, Record<string, string>> = {
    "hosts/bootstrap.sh.hbs": { 'join packages " "': "the Debian package names are constants of the program (hosts/scripts.ts), not config" },
    "hosts/nftables.nft.hbs": { this: "each rule line is composed by components/hosts/firewall.ts from parsed ports and CIDRs, with its comment through nftstr" },
};

interface Interpolation {
    readonly template: string;
    readonly line: number;
    readonly expression: string;
    readonly helper: string | undefined;
}

function interpolations(template: string): Interpolation[] {
    const out: Interpolation[] = [];
    const walk = (node: any): void => {
        if (!node || typeof node !== "object") return;
        if (Array.isArray(node)) return node.forEach(walk);
        if (node.type === "MustacheStatement") {
            const params = node.params.map((p: any) => (p.type === "StringLiteral" ? JSON.stringify(p.value) : p.original)).join(" ");
            const head = node.path.original as string;
            out.push({ template, line: node.loc.start.line, expression: params ? `${head} ${params}` : head, helper: node.params.length > 0 ? head : undefined });
        }
        for (const key of ["body", "program", "inverse"]) walk(node[key]);
    };
    walk(Handlebars.parse(fs.readFileSync(path.join(TEMPLATES_DIR, template), "utf8")));
    return out;
}

const TEMPLATES = [...templateFiles().values()];
/** The pieces a template includes ({{> name}}), by their names in templateFiles ("_name"). */
const includesOf = (template: string): string[] =>
    [...fs.readFileSync(path.join(TEMPLATES_DIR, template), "utf8").matchAll(/\{\{> ([^}\s]+)\}\}/g)].map((m) => `_${m[1]}`);

describe("template lint", () => {
    it("every interpolation goes through a quoting helper, or is on the allow-list with its reason", () => {
        const unquoted = TEMPLATES.flatMap(interpolations).filter((i) => !(i.helper && (QUOTING_HELPERS as readonly string[]).includes(i.helper)) && !ALLOWED[i.template]?.[i.expression]);
        assert.deepEqual(unquoted.map((i) => `${i.template}:${i.line} {{${i.expression}}}`), []);
    });

    it("the allow-list is short and every entry is still used", () => {
        const used = new Set(TEMPLATES.flatMap(interpolations).map((i) => `${i.template} ${i.expression}`));
        const entries = Object.entries(ALLOWED).flatMap(([t, e]) => Object.keys(e).map((x) => `${t} ${x}`));
        assert.ok(entries.length <= 5);
        for (const e of entries) assert.ok(used.has(e), `stale allow-list entry ${e}`);
    });

    it("fails on a template that interpolates a bare value (the lint can fail)", () => {
        const bad = Handlebars.parse("echo {{name}}\n# {{comment name}}\n");
        const statements = bad.body.filter((n: any) => n.type === "MustacheStatement") as any[];
        assert.deepEqual(statements.map((s) => (s.params.length ? s.path.original : "bare")), ["bare", "comment"]);
    });
});

/** The room a components/ file renders from: a role's file its role's, any other its layer's (docs/development.md, Layers). */
function roomOf(file: string): string {
    const [, layer, role, name] = file.split("/");
    return layer === "roles" && name !== undefined ? role! : layer!;
}

describe("templates by room", () => {
    const root = path.dirname(TEMPLATES_DIR);
    const sources = (dir: string): string[] =>
        fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : []));
    const renders = sources(path.join(root, "components")).flatMap((file) =>
        [...fs.readFileSync(file, "utf8").matchAll(/\brender\("([^"]+)"/g)].map((m) => ({ file: path.relative(root, file), name: m[1]! })));

    it("every template a component renders sits in the folder of that component's room, and every template is rendered or included", () => {
        const files = templateFiles();
        assert.ok(renders.length > 40, `${renders.length} render calls found`);
        const misplaced = renders.filter((r) => !files.get(r.name)?.startsWith(`${roomOf(r.file)}/`));
        assert.deepEqual(misplaced.map((r) => `${r.file} renders ${r.name}: templates/${files.get(r.name) ?? "(none)"}, not templates/${roomOf(r.file)}/`), []);
        const included = new Set(TEMPLATES.flatMap(includesOf));
        const rendered = new Set(renders.map((r) => r.name));
        assert.deepEqual([...files.keys()].filter((n) => !rendered.has(n) && !included.has(n)), [], "templates nothing renders or includes");
    });

    it("a template includes only pieces of its own room or of shared/", () => {
        const files = templateFiles();
        const crossing = TEMPLATES.flatMap((t) =>
            includesOf(t)
                .map((piece) => [t, files.get(piece) ?? `(no ${piece})`] as const)
                .filter(([from, piece]) => !piece.startsWith("shared/") && piece.split("/")[0] !== from.split("/")[0]));
        assert.deepEqual(crossing.map(([from, piece]) => `${from} includes ${piece}`), []);
    });

    it("the room of a components/ file (the rule can tell rooms apart)", () => {
        assert.deepEqual(
            ["components/roles/validator/units.ts", "components/roles/storage/node.ts", "components/hosts/scripts.ts", "components/rollout/gate.ts"].map(roomOf),
            ["validator", "storage", "hosts", "rollout"],
        );
    });
});

describe("quoting helpers for the other contexts", () => {
    const HOSTILE = ["a\nrm -rf /", "x\u2028y", "$(id)", "`id`", '"; id; "', "a\\", "100%n", "a\r\nb", "\u0000"];

    it("comment: always one line", () => {
        for (const v of HOSTILE) assert.ok(!/[\n\r\u2028\u0000]/.test(commentText(v)), JSON.stringify(v));
        assert.equal(commentText("node-1"), "node-1");
    });

    it("dq: a value stays inside its double quotes (checked by the shell itself)", () => {
        for (const v of HOSTILE.filter((x) => !/[\n\r\u2028\u0000]/.test(x))) {
            const r = spawnSync("sh", ["-c", `printf %s "${doubleQuoted(v)}"`], { encoding: "utf8" });
            assert.equal(r.stdout, v, JSON.stringify(v));
        }
        assert.throws(() => doubleQuoted("a\nb"), /control or line-separator/);
    });

    it("unitval, envval, int and heredoc refuse what would break their line or file", () => {
        assert.equal(unitValue("100%n"), "100%%n");
        assert.throws(() => unitValue("a\nExecStartPre=/bin/sh"), /control or line-separator/);
        assert.throws(() => unitValue("a\\"), /backslash/);
        assert.equal(envFileValue("0x" + "ab".repeat(32)), "0x" + "ab".repeat(32));
        assert.throws(() => envFileValue("a b"), /environment-file value/);
        assert.throws(() => envFileValue("a\nLD_PRELOAD=/x"), /environment-file value/);
        assert.equal(integer(8080), "8080");
        assert.throws(() => integer("8080"), /whole number/);
        assert.throws(() => integer(1.5), /whole number/);
        assert.throws(() => heredocBody("a\nNODEFLEET_EOF\nrm -rf /\n", "NODEFLEET_EOF"), /end line NODEFLEET_EOF/);
        assert.equal(heredocBody("a\nNODEFLEET_EOFX\n", "NODEFLEET_EOF"), "a\nNODEFLEET_EOFX\n");
    });
});
