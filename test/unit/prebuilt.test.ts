// The lab's prebuilt artifacts (lab/lib/prebuilt.sh through lab/reth.sh and lab/zgs.sh): the real
// scripts run on a scratch copy of the lab, with a cache of their own, so the machine's cache is
// left alone. The artifacts are the real ones in ../shared/prebuilt (linked, or copied and then
// changed by one byte). No test here runs a build: where the scripts would fall back to the source
// build, cargo (and rustc) are kept off PATH and the scripts stop at "cargo … is needed", which proves the fall
// back and nothing more. The source build itself is proven by a run without the folder (the note).
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
const SCRIPTS = ["lab/reth.sh", "lab/zgs.sh", "lab/lib/cargo.sh", "lab/lib/apt.sh", "lab/lib/progress.sh", "lab/lib/prebuilt.sh", "lab/toolchain/upstream.sha256"];

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

describe("prebuilt artifacts (lab/lib/prebuilt.sh)", { skip: haveArtifacts ? false : `no prebuilt folder at ${PREBUILT}` }, () => {
    let dir: string;
    let n = 0;

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
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    /** lab/SCRIPT.sh ARGS in the scratch root with a fresh cache; the artifacts from FOLDER. */
    function lab(script: string, folder: string | undefined, env: Record<string, string> = {}, ...args: string[]) {
        const cache = path.join(dir, `cache-${n++}`);
        const r = spawnSync("bash", [path.join(dir, "root/lab", script), ...args], {
            encoding: "utf8",
            timeout: 60_000,
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

    it("pins the digests the shared folder's SHA256SUMS lists", () => {
        const sums = pins(fs.readFileSync(path.join(PREBUILT, "SHA256SUMS"), "utf8"));
        for (const a of [RETH, ZGS]) assert.equal(PINNED.get(a), sums.get(a), a);
    });

    for (const [script, artifact, member] of [["reth.sh", RETH, "reth"], ["zgs.sh", ZGS, "zgs_node"]] as const) {
        it(`${script}: takes ${artifact} into the cache entry of the build, the binary's digest the pinned one`, () => {
            const r = lab(script, PREBUILT, {}, "path");
            assert.equal(r.status, 0, r.stderr);
            const key = PINNED.get(`${artifact}#cache-key`)!;
            const bin = r.stdout.trim();
            assert.equal(bin, path.join(r.cache, script === "reth.sh" ? "reth" : "zgs", key, member), "the entry the source build makes");
            assert.equal(sha256(bin), PINNED.get(`${artifact}/${member}`));
            assert.equal(fs.statSync(bin).mode & 0o777, 0o755);
            assert.match(r.stderr, new RegExp(`prebuilt artifact ${artifact.replace(/\./g, "\\.")} \\(sha256 checked\\)`));
            assert.doesNotMatch(r.stderr, /building/);
            assert.deepEqual(r.files.filter((f) => f.includes(".prebuilt.")), [], "no scratch directory left");
        });
    }

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
