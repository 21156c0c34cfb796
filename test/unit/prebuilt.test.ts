// The lab's prebuilt artifacts (lab/lib/prebuilt.sh through lab/reth.sh, lab/zgs.sh, lab/beacond.sh,
// lab/artifacts.sh geth, lab/act.sh and lab/toolchain.sh): the real
// scripts run on a scratch copy of the lab, with a cache of their own, so the machine's cache is
// left alone. The artifacts are the real ones in ../shared/prebuilt (linked, or copied and then
// changed by one byte). No test here runs a build: where the scripts would fall back to the source
// build, cargo (and rustc) are kept off PATH and the scripts stop at "cargo … is needed", which proves the fall
// back and nothing more. The source build itself is proven by a run without the folder (the note).
// An artifact the lab has not yet made again after a change of its build settings (the CLI after a
// new patch: `lab/toolchain.sh key` differs from its pinned key) is shown not taken, the source
// build started, and the rest is tested with the CLI's cache entry filled as that build leaves it.
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../../..");
const PREBUILT = process.env.NODEFLEET_PREBUILT ?? path.resolve(ROOT, "../shared/prebuilt");
const PINS = path.join(ROOT, "lab/toolchain/prebuilt.sha256");
const RETH = "reth-1.11.4-lab-x86_64-linux-gnu.tar.xz";
const ZGS = "zgs_node-1.1.0-lab-x86_64-linux-gnu.tar.xz";
const SCRIPTS = [
    "lab/reth.sh", "lab/zgs.sh", "lab/beacond.sh", "lab/artifacts.sh", "lab/toolchain.sh", "lab/act.sh",
    "lab/lib/cargo.sh", "lab/lib/go.sh", "lab/lib/apt.sh", "lab/lib/progress.sh", "lab/lib/prebuilt.sh",
    "lab/toolchain/upstream.sha256", "lab/toolchain/versions.sh", "lab/toolchain/go.mod", "lab/toolchain/go.sum", "lab/toolchain/pulumi-resource-pulumi-nodejs",
    "lab/toolchain/geth/go.mod", "lab/toolchain/geth/go.sum", "lab/toolchain/beacond/go.mod", "lab/toolchain/beacond/go.sum",
    "lab/toolchain/act/go.mod", "lab/toolchain/act/go.sum",
    ...fs.readdirSync(path.join(ROOT, "lab/toolchain/patches"), { recursive: true }).map((f) => `lab/toolchain/patches/${String(f)}`).filter((f) => f.endsWith(".patch")),
];
/**
 * Every artifact the lab takes, with what takes it: the script and its arguments, the binary inside,
 * and the cache entry (relative to NODEFLEET_CACHE, KEY standing for the pinned cache key) the
 * source build would fill. The folder's SHA256SUMS must list exactly these.
 */
const TAKEN: readonly { artifact: string; script: string; args: string[]; member: string; entry: string }[] = [
    { artifact: RETH, script: "reth.sh", args: ["path"], member: "reth", entry: "reth/KEY/reth" },
    { artifact: ZGS, script: "zgs.sh", args: ["path"], member: "zgs_node", entry: "zgs/KEY/zgs_node" },
    { artifact: "beacond-1.1.0-lab-x86_64-linux-gnu.tar.xz", script: "beacond.sh", args: ["path"], member: "beacond", entry: "beacond/KEY/beacond" },
    { artifact: "geth-1.17.0-x86_64-linux-gnu.tar.xz", script: "artifacts.sh", args: ["geth"], member: "geth", entry: "geth/KEY/geth" },
    { artifact: "act-0.2.89-x86_64-linux-gnu.tar.xz", script: "act.sh", args: [], member: "act", entry: "act/KEY/act" },
    { artifact: "pulumi-v3.248.0-lab-x86_64-linux-gnu.tar.xz", script: "toolchain.sh", args: ["hcloud"], member: "pulumi", entry: "pulumi/KEY/pulumi" },
    { artifact: "pulumi-language-nodejs-v3.248.0-x86_64-linux-gnu.tar.xz", script: "toolchain.sh", args: ["hcloud"], member: "pulumi-language-nodejs", entry: "toolchain/pulumi-language-nodejs-v3.248.0-KEY/pulumi-language-nodejs" },
    { artifact: "pulumi-resource-command-v1.2.1-lab-x86_64-linux-gnu.tar.xz", script: "toolchain.sh", args: ["hcloud"], member: "pulumi-resource-command", entry: "toolchain/pulumi-resource-command-1.2.1-KEY/pulumi-resource-command" },
    { artifact: "pulumi-resource-hcloud-v1.39.1-x86_64-linux-gnu.tar.xz", script: "toolchain.sh", args: ["hcloud"], member: "pulumi-resource-hcloud", entry: "toolchain/pulumi-resource-hcloud-1.39.1-KEY/pulumi-resource-hcloud" },
    // The stock toolchain (no patch), as an operator installs Pulumi: its own cache entries.
    { artifact: "pulumi-v3.248.0-x86_64-linux-gnu.tar.xz", script: "toolchain.sh", args: ["stock"], member: "pulumi", entry: "pulumi/KEY/pulumi" },
    { artifact: "pulumi-resource-command-v1.2.1-x86_64-linux-gnu.tar.xz", script: "toolchain.sh", args: ["stock"], member: "pulumi-resource-command", entry: "toolchain/pulumi-resource-command-1.2.1-KEY/pulumi-resource-command" },
];

/**
 * Artifacts asked of the lab (their recipes: docs/toolchain.md) that its folder may not hold yet:
 * until one is there, its script builds from source, and the test shows that fall back instead.
 */
const ASKED = new Set(["act-0.2.89-x86_64-linux-gnu.tar.xz"]);

const sha256 = (file: string) => createHash("sha256").update(fs.readFileSync(file)).digest("hex");
/** The pins file as a map: name → digest (or cache key), comments left out. */
function pins(text: string): Map<string, string> {
    const out = new Map<string, string>();
    for (const line of text.split("\n")) {
        const m = /^([0-9a-f]+) {2}(\S+)$/.exec(line);
        if (m) out.set(m[2]!, m[1]!);
    }
    return out;
}
const PINNED = pins(fs.readFileSync(PINS, "utf8"));
const haveArtifacts = fs.existsSync(path.join(PREBUILT, RETH)) && fs.existsSync(path.join(PREBUILT, ZGS));
const CLI = "pulumi-v3.248.0-lab-x86_64-linux-gnu.tar.xz";

describe("prebuilt artifacts (lab/lib/prebuilt.sh)", { skip: haveArtifacts ? false : `no prebuilt folder at ${PREBUILT}` }, () => {
    let dir: string;
    let n = 0;
    /** The cache key of the CLI this checkout builds (its go.mod, go.sum and patches). */
    let cliKey = "";
    /** Whether the CLI artifact stands for another key: made before a patch was added. */
    let cliStale = false;
    /** A CLI binary put at the CLI's cache entry before a run (as its source build leaves it), or none. */
    let cliPrefill: string | undefined;

    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-prebuilt-"));
        for (const f of SCRIPTS) {
            fs.mkdirSync(path.dirname(path.join(dir, "root", f)), { recursive: true });
            fs.copyFileSync(path.join(ROOT, f), path.join(dir, "root", f));
        }
        fs.copyFileSync(PINS, path.join(dir, "root/lab/toolchain/prebuilt.sha256"));
        // A PATH without cargo and rustc: a fall back to the source build stops at once, and the
        // artifact is taken whatever compiler the machine has (here none).
        fs.mkdirSync(path.join(dir, "bin"));
        const key = lab("toolchain.sh", PREBUILT, {}, "key");
        assert.equal(key.status, 0, key.stderr);
        cliKey = key.stdout.trim();
        assert.match(cliKey, /^[0-9a-f]{16}$/);
        cliStale = cliKey !== PINNED.get(`${CLI}#cache-key`);
        // Any v3.248.0 CLI serves to fill the entry: toolchain.sh runs it only to read a provider's schema.
        fs.mkdirSync(path.join(dir, "prefill"));
        assert.equal(spawnSync("tar", ["-xJf", path.join(PREBUILT, CLI), "-C", path.join(dir, "prefill"), "pulumi"]).status, 0);
        assert.equal(sha256(path.join(dir, "prefill/pulumi")), PINNED.get(`${CLI}/pulumi`));
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    /** lab/SCRIPT.sh ARGS in the scratch root with a fresh cache; the artifacts from FOLDER. */
    function lab(script: string, folder: string | undefined, env: Record<string, string> = {}, ...args: string[]) {
        const cache = path.join(dir, `cache-${n++}`);
        if (cliPrefill !== undefined) {
            fs.mkdirSync(path.join(cache, "pulumi", cliKey), { recursive: true });
            fs.copyFileSync(cliPrefill, path.join(cache, "pulumi", cliKey, "pulumi"));
            fs.chmodSync(path.join(cache, "pulumi", cliKey, "pulumi"), 0o755);
        }
        const r = spawnSync("bash", [path.join(dir, "root/lab", script), ...args], {
            encoding: "utf8",
            // A bound, not a measure: beside the hosts' tests (at nice 10) unpacking the toolchain's
            // four archives took over a minute.
            timeout: 300_000,
            env: {
                PATH: [path.join(dir, "bin"), "/usr/local/bin", "/usr/bin", "/bin"].join(":"),
                HOME: path.join(dir, "home"),
                NODEFLEET_CACHE: cache,
                NODEFLEET_UPSTREAM: path.join(dir, "no-upstream"),
                ...(folder === undefined ? {} : { NODEFLEET_PREBUILT: folder }),
                ...env,
            },
        });
        const files = fs.existsSync(cache) ? (fs.readdirSync(cache, { recursive: true }) as string[]).map((f) => f.replace(/\\/g, "/")) : [];
        return { status: r.status, stdout: r.stdout, stderr: r.stderr, cache, files };
    }
    /** A folder holding a copy of ARTIFACT with the byte at OFFSET changed. */
    function tampered(artifact: string, offset: number): string {
        const folder = fs.mkdtempSync(path.join(dir, "tampered-"));
        const bytes = fs.readFileSync(path.join(PREBUILT, artifact));
        bytes[offset] = bytes[offset]! ^ 0x01;
        fs.writeFileSync(path.join(folder, artifact), bytes);
        return folder;
    }

    it("takes every artifact of the shared folder, each pinned with the digests its SHA256SUMS lists", () => {
        const sums = pins(fs.readFileSync(path.join(PREBUILT, "SHA256SUMS"), "utf8"));
        const expected = TAKEN.filter((t) => !ASKED.has(t.artifact) || sums.has(t.artifact)).map((t) => t.artifact);
        assert.deepEqual([...sums.keys()].sort(), expected.sort(), "every artifact in the folder is taken, and every one not asked for lately is there");
        for (const { artifact, member } of TAKEN) {
            if (sums.has(artifact)) assert.equal(PINNED.get(artifact), sums.get(artifact), artifact);
            for (const pin of [`${artifact}/${member}`, `${artifact}#cache-key`]) assert.ok(PINNED.has(pin), `no pin ${pin}`);
        }
    });

    const byScript = new Map<string, (typeof TAKEN)[number][]>();
    for (const t of TAKEN) { const k = [t.script, ...t.args].join(" "); byScript.set(k, [...(byScript.get(k) ?? []), t]); }
    for (const [call, taken] of byScript) {
        const absent = taken.every((t) => ASKED.has(t.artifact) && !fs.existsSync(path.join(PREBUILT, t.artifact)));
        if (absent) {
            it(`lab/${call}: ${taken.map((t) => t.artifact).join(", ")} asked of the lab and not in its folder yet: the source build starts, said so, and fills no cache entry when it fails`, () => notYetMade(call, taken));
            continue;
        }
        it(`lab/${call}: takes ${taken.map((t) => t.artifact).join(", ")} into the cache entries of the build, each binary's digest the pinned one; nothing built${call === "toolchain.sh hcloud" ? " (the CLI's when it stands for this checkout's patches: the next test)" : ""}`, () => {
            const [script, ...args] = call.split(" ");
            // A stale CLI artifact is not taken (the next test): its entry is filled as the source build fills it.
            const stale = call === "toolchain.sh hcloud" && cliStale;
            cliPrefill = stale ? path.join(dir, "prefill/pulumi") : undefined;
            let r: ReturnType<typeof lab>;
            try {
                r = lab(script!, PREBUILT, {}, ...args);
            } finally {
                cliPrefill = undefined;
            }
            assert.equal(r.status, 0, r.stderr);
            for (const { artifact, member, entry } of taken.filter((t) => !(stale && t.artifact === CLI))) {
                const bin = path.join(r.cache, entry.replace("KEY", PINNED.get(`${artifact}#cache-key`)!));
                assert.ok(fs.existsSync(bin), `${artifact}: no ${bin} (the entry the source build makes); cache holds ${r.files.join(" ")}`);
                assert.equal(sha256(bin), PINNED.get(`${artifact}/${member}`));
                assert.equal(fs.statSync(bin).mode & 0o777, 0o755);
                assert.match(r.stderr, new RegExp(`prebuilt artifact ${artifact.replace(/\./g, "\\.")} \\(sha256 checked\\)`));
            }
            if (taken.length === 1 && script !== "toolchain.sh") assert.equal(r.stdout.trim(), path.join(r.cache, taken[0]!.entry.replace("KEY", PINNED.get(`${taken[0]!.artifact}#cache-key`)!)), "the path printed");
            assert.doesNotMatch(r.stderr, /building|compiled \d+\/\d+ packages/);
            assert.deepEqual(r.files.filter((f) => f.includes(".prebuilt.")), [], "no scratch directory left");
        });
    }

    /** FN with a `go` on PATH that only says it ran: a source build stops at its first go command. */
    function withStandInGo<T>(fn: () => T): T {
        fs.writeFileSync(path.join(dir, "bin/go"), "#!/bin/sh\necho \"go $*: not on this test's machine\" >&2\nexit 1\n", { mode: 0o755 });
        try {
            return fn();
        } finally {
            fs.rmSync(path.join(dir, "bin/go"));
        }
    }

    /** An artifact asked for and not yet in the folder: the script says so and starts the source build. */
    function notYetMade(call: string, taken: (typeof TAKEN)[number][]) {
        const [script, ...args] = call.split(" ");
        withStandInGo(() => {
            const r = lab(script!, PREBUILT, {}, ...args);
            assert.equal(r.status, 1, "stops where the source build's go fails");
            for (const { artifact, member } of taken) {
                assert.ok(r.stderr.includes(`no prebuilt artifact ${path.join(PREBUILT, artifact)}: building from source`), r.stderr);
                assert.ok(r.stderr.includes(`building ${member} from the Go module proxy`), r.stderr);
                assert.ok(r.stderr.includes(`produced no ${member}`), r.stderr);
            }
            assert.deepEqual(r.files.filter((f) => /\/[0-9a-f]{16}\//.test(f)), [], "nothing in a cache entry");
        });
    }

    it("the Pulumi CLI artifact: taken when it stands for this checkout's patches, else not taken and the source build started, both keys named", () => {
        withStandInGo(() => {
            const r = lab("toolchain.sh", PREBUILT);
            if (cliStale) {
                assert.equal(r.status, 1, "stops at the source build's first go command");
                assert.ok(r.stderr.includes(`the prebuilt artifact ${CLI} stands for cache key ${PINNED.get(`${CLI}#cache-key`)}, this build's is ${cliKey} (a build setting differs): building from source`), r.stderr);
                assert.match(r.stderr, /go mod download .*: not on this test's machine/);
                assert.equal(r.files.some((f) => /^pulumi\/[0-9a-f]{16}\/pulumi$/.test(f)), false, "nothing in the CLI's cache entry");
            } else {
                assert.equal(r.status, 0, r.stderr);
                assert.equal(sha256(path.join(r.cache, "pulumi", cliKey, "pulumi")), PINNED.get(`${CLI}/pulumi`));
                assert.doesNotMatch(r.stderr, /building from source|go mod download/);
            }
        });
    });

    it("a tampered Go artifact (the language host) is refused like the others: named, never run, nothing in the cache", () => {
        const artifact = "pulumi-language-nodejs-v3.248.0-x86_64-linux-gnu.tar.xz";
        const folder = tampered(artifact, 8192);
        for (const other of TAKEN.filter((t) => t.script === "toolchain.sh" && t.artifact !== artifact)) fs.symlinkSync(path.join(PREBUILT, other.artifact), path.join(folder, other.artifact));
        cliPrefill = cliStale ? path.join(dir, "prefill/pulumi") : undefined;
        let r: ReturnType<typeof lab>;
        try {
            r = lab("toolchain.sh", folder);
        } finally {
            cliPrefill = undefined;
        }
        assert.equal(r.status, 1);
        assert.ok(r.stderr.includes(`refusing the prebuilt artifact ${path.join(folder, artifact)}: its sha256 is ${sha256(path.join(folder, artifact))}`), r.stderr);
        assert.equal(r.files.some((f) => f.endsWith("/pulumi-language-nodejs")), false);
    });

    it("refuses an artifact with one byte changed, naming the file and both digests; nothing unpacked or built", () => {
        const folder = tampered(RETH, 4096);
        const actual = sha256(path.join(folder, RETH));
        const r = lab("reth.sh", folder, {}, "path");
        assert.equal(r.status, 1);
        assert.equal(r.stdout, "", "no path printed");
        assert.ok(
            r.stderr.includes(`refusing the prebuilt artifact ${path.join(folder, RETH)}: its sha256 is ${actual}, but ${path.join(dir, "root/lab/toolchain/prebuilt.sha256")} pins ${PINNED.get(RETH)}`),
            r.stderr,
        );
        assert.doesNotMatch(r.stderr, /building from source|cargo/);
        assert.deepEqual(r.files, [], "the cache is untouched");
    });

    it("with NODEFLEET_NO_SOURCE_BUILD (a deploy job's), a CLI or plugin that no artifact provides stops it, named, and nothing is built", () => {
        // A `go` that records that it ran: it must not.
        fs.writeFileSync(path.join(dir, "bin/go"), `#!/bin/sh\necho ran >> ${JSON.stringify(path.join(dir, "go-ran"))}\nexit 1\n`, { mode: 0o755 });
        const empty = fs.mkdtempSync(path.join(dir, "no-artifacts-"));
        try {
            const cli = lab("toolchain.sh", empty, { NODEFLEET_NO_SOURCE_BUILD: "1" });
            assert.equal(cli.status, 1);
            assert.ok(cli.stderr.includes(`the Pulumi CLI v3.248.0-lab (cache key ${cliKey}) is neither on this machine nor a pinned prebuilt artifact in ${empty}, and NODEFLEET_NO_SOURCE_BUILD forbids building it here`), cli.stderr);
            // The CLI there, the language host's artifact missing: the plugin is named the same way.
            cliPrefill = path.join(dir, "prefill/pulumi");
            const plugin = lab("toolchain.sh", empty, { NODEFLEET_NO_SOURCE_BUILD: "1" });
            assert.equal(plugin.status, 1);
            assert.match(plugin.stderr, /pulumi-language-nodejs v3\.248\.0 \(cache key [0-9a-f]{16}\) is neither on this machine nor a pinned prebuilt artifact/);
            assert.equal(fs.existsSync(path.join(dir, "go-ran")), false, "go never ran");
        } finally {
            cliPrefill = undefined;
            fs.rmSync(path.join(dir, "bin/go"));
        }
    });

    it("with NODEFLEET_BUILD_FROM_SOURCE=1, a changed artifact turns into the source build, said so", () => {
        const r = lab("zgs.sh", tampered(ZGS, 100), { NODEFLEET_BUILD_FROM_SOURCE: "1" }, "build");
        assert.equal(r.status, 1, "stops at the missing cargo: the source build was started");
        assert.match(r.stderr, /refusing the prebuilt artifact .*; NODEFLEET_BUILD_FROM_SOURCE=1: building from source instead/);
        assert.match(r.stderr, /cargo \(Rust 1\.88 or newer\) is needed to build zgs/);
        assert.equal(r.files.some((f) => f.endsWith("zgs_node")), false);
    });

    it("refuses a binary whose digest is not the pinned one even inside an archive that matches its pin", () => {
        // A pins file of the scratch root that pins the real archive but another digest for the binary.
        const alt = path.join(dir, "root/lab/toolchain/prebuilt.sha256");
        const saved = fs.readFileSync(alt, "utf8");
        const wrong = "0".repeat(64);
        fs.writeFileSync(alt, saved.replace(`${PINNED.get(`${RETH}/reth`)}  ${RETH}/reth`, `${wrong}  ${RETH}/reth`));
        try {
            const r = lab("reth.sh", PREBUILT, {}, "build");
            assert.equal(r.status, 1);
            assert.ok(r.stderr.includes(`(reth inside it): its sha256 is ${PINNED.get(`${RETH}/reth`)}, but`), r.stderr);
            assert.ok(r.stderr.includes(`pins ${wrong}`));
            assert.equal(r.files.some((f) => /^reth\/[0-9a-f]{16}\/reth$/.test(f)), false, "the binary is not in the cache");
        } finally {
            fs.writeFileSync(alt, saved);
        }
    });

    it("an empty NODEFLEET_PREBUILT, or no artifact in the folder, is the source build, said so", () => {
        const empty = lab("reth.sh", "", {}, "build");
        assert.match(empty.stderr, /NODEFLEET_PREBUILT is empty: building from source/);
        const none = lab("reth.sh", path.join(dir, "bin"), {}, "build");
        assert.match(none.stderr, new RegExp(`no prebuilt artifact ${path.join(dir, "bin", RETH).replace(/\./g, "\\.")}: building from source`));
        for (const r of [empty, none]) {
            assert.equal(r.status, 1);
            assert.match(r.stderr, /cargo \(Rust 1\.88 or newer\) is needed to build reth/);
        }
    });

    it("an artifact made for other build settings (another cache key) is not taken", () => {
        const r = lab("reth.sh", PREBUILT, {}, "build");
        assert.equal(r.status, 0, "same settings: taken");
        const alt = path.join(dir, "root/lab/reth.sh");
        const saved = fs.readFileSync(alt, "utf8");
        fs.writeFileSync(alt, saved.replace('FEATURES="reth-revm/portable,asm-keccak"', 'FEATURES="reth-revm/portable"'));
        try {
            const other = lab("reth.sh", PREBUILT, {}, "build");
            assert.equal(other.status, 1);
            assert.match(other.stderr, new RegExp(`stands for cache key ${PINNED.get(`${RETH}#cache-key`)}, this build's is [0-9a-f]{16} .*: building from source`));
            assert.equal(other.files.some((f) => /^reth\/[0-9a-f]{16}\/reth$/.test(f)), false);
        } finally {
            fs.writeFileSync(alt, saved);
        }
    });
});
