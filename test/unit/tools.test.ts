// The host tools' way to a host (components/hosts/tools.ts): the bundle written on this machine and
// the scripts' put_tool, run here with sh against a scratch home. The copy itself (SFTP by the real
// command provider) is proven by the cli tier's scripted host and on the dev VMs.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { bundledScriptReader, bundleRunner, HOST_TOOLS_DIR, roleTools, scriptDigest, writeToolBundle } from "../../components/hosts/tools";
import { HOSTFILES_DIR, TEMPLATES_DIR } from "../../components/base/render";

/**
 * A scratch "host": the SSH user's home with its tools directory, and a bin/ whose getent answers
 * for the user the steps run for (SUDO_USER=operator) with that home, and for nobody else.
 */
function scratchHost(prefix: string): { scratch: string; tools: string; bin: string } {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    const home = path.join(scratch, "home");
    const tools = path.join(home, HOST_TOOLS_DIR);
    fs.mkdirSync(tools, { recursive: true });
    const bin = path.join(scratch, "bin");
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, "getent"), `#!/bin/sh\n[ "$2" = operator ] || exit 2\necho "$2:x:1000:1000::${home}:/bin/sh"\n`, { mode: 0o755 });
    return { scratch, tools, bin };
}

describe("host tools", () => {
    it("each role's tools are hostfiles/ files, named by the sha256 of their content", () => {
        for (const role of ["storage", "sequencer", "validator"] as const) {
            const tools = roleTools(role);
            assert.ok(tools.length > 0);
            for (const t of tools) assert.equal(t.digest, crypto.createHash("sha256").update(fs.readFileSync(path.join(HOSTFILES_DIR, t.name))).digest("hex"), t.name);
        }
        // The validator's package whole: every module of hostfiles/zgvalidator.
        const modules = fs.readdirSync(path.join(HOSTFILES_DIR, "zgvalidator")).filter((f) => f.endsWith(".py"));
        for (const m of modules) assert.ok(roleTools("validator").some((t) => t.path === `zgvalidator/${m}`), m);
    });

    it("each role's tools hold every hostfiles/ module their Python imports (one missing fails on the host alone, at run time)", () => {
        // The host tools' import graph as their layering test reads it (hostfiles/tests/test_imports.py):
        // {module: the hostfiles modules it imports}, a script's dashes read as underscores.
        const read = spawnSync("python3", ["-c", "import json; from tests.test_imports import graph, modules; print(json.dumps({k: sorted(v) for k, v in graph(modules()).items()}))"], { cwd: HOSTFILES_DIR, encoding: "utf8" });
        assert.equal(read.status, 0, read.stderr);
        const imports = JSON.parse(read.stdout) as Record<string, string[]>;
        const moduleOf = (tool: string) => tool.slice(0, -".py".length).replace(/\//g, ".").replace(/-/g, "_");
        for (const role of ["storage", "sequencer", "validator"] as const) {
            const bundled = new Set(roleTools(role).filter((t) => t.name.endsWith(".py")).map((t) => moduleOf(t.name)));
            let seen = 0;
            for (const module of bundled) {
                for (const dep of imports[module] ?? []) {
                    seen++;
                    assert.ok(bundled.has(dep), `${role}: ${module} imports ${dep}, not among the role's tools`);
                }
            }
            assert.ok(seen >= 3, `${role}: its tools import hostfiles/ modules (${seen} seen)`);
        }
    });

    it("writes a bundle once, named by its contents, in the project's working directory", () => {
        const cwd = process.cwd();
        const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-tools-"));
        try {
            process.chdir(scratch);
            const a = writeToolBundle(roleTools("storage"));
            assert.match(a, /^\.nodefleet\/tools\/[0-9a-f]{32}\/$/);
            const mtime = fs.statSync(path.join(a, roleTools("storage")[0]!.digest)).mtimeMs;
            // The same tools in another order (and twice): the same bundle, not written again.
            assert.equal(writeToolBundle([...roleTools("storage")].reverse().concat(roleTools("storage"))), a);
            assert.equal(fs.statSync(path.join(a, roleTools("storage")[0]!.digest)).mtimeMs, mtime);
            const b = writeToolBundle(roleTools("sequencer"));
            assert.notEqual(b, a);
            assert.deepEqual(fs.readdirSync(".nodefleet/tools").sort(), [path.basename(a), path.basename(b)].sort(), "no half-written bundle left beside them");
        } finally {
            process.chdir(cwd);
            fs.rmSync(scratch, { recursive: true, force: true });
        }
    });

    it("the bundles' scripts are read by digest from any bundle, checked against their name; one written after the first read is found", () => {
        const cwd = process.cwd();
        const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-tools-"));
        try {
            process.chdir(scratch);
            const script = (text: string) => ({ digest: scriptDigest(text), text });
            const [one, two, late] = [script("echo one\n"), script("echo two\n"), script("echo late\n")];
            writeToolBundle([], [one]);
            const b = writeToolBundle([], [one, two]);
            const read = bundledScriptReader(scratch);
            assert.equal(read(one.digest), one.text);
            assert.equal(read(two.digest), two.text);
            assert.equal(read(late.digest), undefined);
            writeToolBundle([], [late]);
            assert.equal(read(late.digest), late.text, "listed again on a digest it did not have");
            fs.writeFileSync(path.join(b, two.digest), "echo altered\n");
            assert.equal(bundledScriptReader(scratch)(two.digest), undefined, "a file whose content is not its name's is not read as the script");
            const a = writeToolBundle([], [one, late]);
            fs.writeFileSync(path.join(a, one.digest), "echo altered\n");
            assert.equal(bundledScriptReader(scratch)(one.digest), one.text, "an altered copy in one bundle, the script from another");
            assert.equal(bundledScriptReader(path.join(scratch, "nowhere"))(one.digest), undefined);
        } finally {
            process.chdir(cwd);
            fs.rmSync(scratch, { recursive: true, force: true });
        }
    });

    it("put_tool installs the file of a digest after checking it, and stops on a missing or altered one", () => {
        const { scratch, tools, bin } = scratchHost("nodefleet-put-tool-");
        try {
            const body = "print('tool')\n";
            const digest = crypto.createHash("sha256").update(body).digest("hex");
            fs.writeFileSync(path.join(tools, digest), body);
            const partial = fs.readFileSync(path.join(TEMPLATES_DIR, "shared", "_put.sh.hbs"), "utf8").replace("{{sh driftRecord}}", `'${scratch}/record'`);
            assert.doesNotMatch(partial, /\{\{/, "the partial has no other template field");
            const run = (d: string) =>
                spawnSync("sh", ["-c", `set -eu\nchanged=""\n${partial}\nput_tool "$0/out/tool.py" 0755 "$(id -un):$(id -gn)" "$1"\necho "changed:$changed"`, scratch, d], {
                    encoding: "utf8",
                    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, SUDO_USER: "operator" },
                });
            fs.mkdirSync(path.join(scratch, "out"));
            const ok = run(digest);
            assert.equal(ok.status, 0, ok.stderr);
            assert.equal(fs.readFileSync(path.join(scratch, "out/tool.py"), "utf8"), body);
            assert.equal(fs.statSync(path.join(scratch, "out/tool.py")).mode & 0o777, 0o755);
            assert.match(ok.stdout, new RegExp(`changed: ${scratch}/out/tool.py`));
            assert.ok(fs.readdirSync(path.join(scratch, "record")).some((f) => f.startsWith("f.")), "recorded for the drift check");
            // Run again: unchanged, nothing reported.
            assert.match(run(digest).stdout, /^changed:$/m);
            // Altered on the host: refused, the file in place untouched.
            fs.writeFileSync(path.join(tools, digest), "print('not the tool')\n");
            const altered = run(digest);
            assert.equal(altered.status, 1);
            assert.match(altered.stderr, new RegExp(`${tools}/${digest} \\(for ${scratch}/out/tool.py\\) is missing or altered on this host`));
            assert.equal(fs.readFileSync(path.join(scratch, "out/tool.py"), "utf8"), body);
            // Missing.
            const missing = run("0".repeat(64));
            assert.equal(missing.status, 1);
            assert.match(missing.stderr, /is missing or altered on this host: the host's tools step copies it/);
        } finally {
            fs.rmSync(scratch, { recursive: true, force: true });
        }
    });

    it("two steps putting the same file at once through put() each stage their own copy: the file is whole, one of theirs, and no staging file is left", () => {
        const { scratch, bin } = scratchHost("nodefleet-put-race-");
        try {
            // Each step has a drift record of its own (the partial starts it anew): so each writer.
            const partial = (letter: string) => fs.readFileSync(path.join(TEMPLATES_DIR, "shared", "_put.sh.hbs"), "utf8").replace("{{sh driftRecord}}", `'${scratch}/record-${letter}'`);
            // Each writer puts a 2 MB content of its own 40 times, as two steps of one host put a
            // shared tool: with one fixed staging name, one's `cat` and the other's `mv` met in it.
            const writer = (letter: string) => [
                "set -eu", 'changed=""', partial(letter),
                `i=0; while [ $i -lt 40 ]; do head -c 2000000 /dev/zero | tr '\\0' ${letter} | put "$1/out/shared.py" 0644 "$(id -un):$(id -gn)"; i=$((i + 1)); done`,
            ].join("\n");
            fs.mkdirSync(path.join(scratch, "out"));
            for (const w of ["a", "b"]) fs.writeFileSync(path.join(scratch, `writer-${w}.sh`), writer(w));
            const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
            const script = 'sh "$0/writer-a.sh" "$0" & a=$!; sh "$0/writer-b.sh" "$0" & b=$!; wait $a; ra=$?; wait $b; echo "$ra $?"';
            const r = spawnSync("bash", ["-c", script, scratch], { encoding: "utf8", env, timeout: 120_000 });
            assert.equal(r.stdout.trim(), "0 0", `both writers end well:\n${r.stderr}`);
            const content = fs.readFileSync(path.join(scratch, "out/shared.py"), "utf8");
            assert.equal(content.length, 2_000_000, "the file is whole");
            assert.ok(/^(a+|b+)$/.test(content), "one writer's content, not a mix");
            assert.deepEqual(fs.readdirSync(path.join(scratch, "out")), ["shared.py"], "no staging file left");
        } finally {
            fs.rmSync(scratch, { recursive: true, force: true });
        }
    });

    it("a bundled step's runner runs the script of its digest from the SSH user's bundle, and nothing when it is missing or altered", () => {
        const { scratch, tools, bin } = scratchHost("nodefleet-runner-");
        try {
            const script = `#!/bin/sh\nset -eu\necho "ran as $0" > '${scratch}/ran'\n`;
            const digest = scriptDigest(script);
            assert.equal(digest, crypto.createHash("sha256").update(script).digest("hex"));
            fs.writeFileSync(path.join(tools, digest), script);
            const runner = bundleRunner("fleet-h1-release-0g-chain", digest);
            // As the provider runs it: sh reading the runner on stdin.
            const run = () => spawnSync("sh", ["-s"], { input: runner, encoding: "utf8", env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, SUDO_USER: "operator" } });
            const ok = run();
            assert.equal(ok.status, 0, ok.stderr);
            assert.equal(fs.readFileSync(path.join(scratch, "ran"), "utf8"), `ran as ${tools}/${digest}\n`);
            const shellcheck = spawnSync("shellcheck", ["-s", "sh", "-"], { input: runner, encoding: "utf8" });
            assert.equal(shellcheck.status, 0, shellcheck.stdout);
            // Altered on the host, then missing: refused, the script not run.
            fs.rmSync(path.join(scratch, "ran"));
            fs.writeFileSync(path.join(tools, digest), `${script}echo more\n`);
            for (const state of ["altered", "missing"]) {
                if (state === "missing") fs.rmSync(path.join(tools, digest));
                const refused = run();
                assert.equal(refused.status, 1, state);
                assert.match(refused.stderr, new RegExp(`nodefleet: ${tools}/${digest} is missing or altered on this host \\(pulumi up --replace the host's -tools step\\)`), state);
                assert.equal(fs.existsSync(path.join(scratch, "ran")), false, `${state}: not run`);
            }
            // The label is the step's name: anything else in it cannot reach the shell.
            assert.match(bundleRunner("a\nrm -rf / $(x)", digest).split("\n")[0]!, /^# nodefleet: a\?rm -rf \/ \?\?x\?$/);
            assert.throws(() => bundleRunner("x", "0; rm -rf /"), /a script digest is 64 hex digits/);
        } finally {
            fs.rmSync(scratch, { recursive: true, force: true });
        }
    });

    it("a key step's runner sets its secrets and runs the bundled body in its own shell: each file written byte for byte, whatever it holds", () => {
        const { scratch, tools, bin } = scratchHost("nodefleet-secret-runner-");
        try {
            // The body as the key templates write a secret: a here-document line expanding its variable.
            const body = ["#!/bin/sh", "set -eu", "changed=x", ...["a", "b"].map((n) => `cat > '${scratch}/${n}' <<NODEFLEET_EOF\n$nodefleet_secret_${n}\nNODEFLEET_EOF`), `echo "changed=$changed" > '${scratch}/shell'`, ""].join("\n");
            const digest = scriptDigest(body);
            fs.writeFileSync(path.join(tools, digest), body);
            const hostile = [
                "{\"priv_key\": {\"value\": \"abc'def\\\\\\\"ghi\"}}\n",
                "$(touch pwned) `touch pwned` ${HOME} \\n \\\\ $$ ' '' \" \n\nNODEFLEET_EOF\n\n",
            ];
            const secrets = { a: hostile[0]!, b: hostile[1]! };
            const runner = bundleRunner("fleet-validator-1-validator-key", digest, secrets);
            assert.ok(runner.endsWith('\n. "$f"\n'));
            // (SC1090: the sourced file is the bundle's, named at run time; SC2016, SC2034: the
            // secrets are single-quoted on purpose and read by the sourced body)
            const shellcheck = spawnSync("shellcheck", ["-s", "sh", "-e", "SC1090,SC2016,SC2034", "-"], { input: runner, encoding: "utf8" });
            assert.equal(shellcheck.status, 0, shellcheck.stdout);
            const run = spawnSync("sh", ["-s"], { input: runner, encoding: "utf8", cwd: scratch, env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, SUDO_USER: "operator" } });
            assert.equal(run.status, 0, run.stderr);
            assert.equal(fs.readFileSync(path.join(scratch, "a"), "utf8"), secrets.a);
            assert.equal(fs.readFileSync(path.join(scratch, "b"), "utf8"), secrets.b);
            assert.equal(fs.existsSync(path.join(scratch, "pwned")), false, "nothing in a secret ran");
            // Sourced, not a new process: what the body sets is the runner's shell's.
            assert.equal(fs.readFileSync(path.join(scratch, "shell"), "utf8"), "changed=x\n");
            // A secret is a file's content: it ends in a newline (the here-document gives it back so).
            assert.throws(() => bundleRunner("x", digest, { a: "no newline" }), /ends in a newline/);
        } finally {
            fs.rmSync(scratch, { recursive: true, force: true });
        }
    });
});
