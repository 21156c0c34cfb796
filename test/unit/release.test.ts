// Release install: the rendered scripts (golden + shellcheck) and the install script run for
// real on this machine against a local HTTP server, with /opt/nodefleet moved into a temp dir.
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import { renderRelease } from "../../components/hosts/scripts";
import { golden, requireTool, runTool, underRoot } from "../support/golden";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-release-"));

function tarball(top: string, files: Record<string, string>): Buffer {
    const src = fs.mkdtempSync(path.join(tmp, "src-"));
    for (const [name, content] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(src, top, name)), { recursive: true });
        fs.writeFileSync(path.join(src, top, name), content, { mode: 0o755 });
    }
    const r = spawnSync("tar", ["-czf", "-", "-C", src, top]);
    assert.equal(r.status, 0);
    return r.stdout;
}

const ARCHIVE = tarball("Aristotle-v1.0.6", { "bin/reth": "#!/bin/sh\necho reth\n", "geth-genesis.json": "{}" });
const SHA = crypto.createHash("sha256").update(ARCHIVE).digest("hex");
// The server runs in its own process: the scripts run through spawnSync, which blocks this one.
let server: ChildProcess;
let base = "";
const served = fs.mkdtempSync(path.join(tmp, "served-"));
const accessLog = path.join(tmp, "access.log");
const downloads = () => (fs.existsSync(accessLog) ? fs.readFileSync(accessLog, "utf8").split("\n").filter((l) => l.includes("GET /")).length : 0);

/**
 * The script with a `systemd-run` of this test's first on its PATH: one that fails (a machine
 * without systemd: what is set aside is deleted at once) or one that records its arguments and
 * deletes nothing (what a host's systemd would run later). Never this machine's own.
 */
function withSystemdRun(script: string, kind: "failing" | "recording"): { script: string; calls: () => string[] } {
    const dir = fs.mkdtempSync(path.join(tmp, "bin-"));
    const log = path.join(dir, "calls");
    fs.writeFileSync(path.join(dir, "systemd-run"), kind === "failing" ? "#!/bin/sh\necho 'System has not been booted with systemd' >&2\nexit 1\n" : `#!/bin/sh\necho "$*" >> '${log}'\n`, { mode: 0o755 });
    return { script: `PATH='${dir}':"$PATH"\n${script}`, calls: () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : []) };
}

describe("release install", () => {
    before(async () => {
        fs.writeFileSync(path.join(served, "aristotle-v1.0.6.tar.gz"), ARCHIVE);
        const port = 20000 + Math.floor(Math.random() * 20000);
        const log = fs.openSync(accessLog, "w");
        server = spawn("python3", ["-m", "http.server", "--bind", "127.0.0.1", String(port), "--directory", served], { stdio: ["ignore", log, log] });
        base = `http://127.0.0.1:${port}`;
        for (let i = 0; i < 100 && spawnSync("curl", ["-fsS", "-o", "/dev/null", `${base}/`]).status !== 0; i++) await new Promise((r) => setTimeout(r, 100));
    });
    after(() => server.kill());

    it("renders install and remove scripts that match golden copies and pass shellcheck", () => {
        requireTool("shellcheck", "shellcheck");
        const s = renderRelease("h1", { name: "0g-chain", url: "https://github.com/0glabs/0g-chain/releases/download/v1.0.6/aristotle-v1.0.6.tar.gz", sha256: "ab".repeat(32) });
        for (const [kind, text] of [["install", s.install], ["remove", s.remove]] as const) {
            const r = runTool("shellcheck", ["--shell=sh", "--severity=style", golden(`release/0g-chain-${kind}.sh`, text)]);
            assert.equal(r.status, 0, r.output);
        }
        assert.equal(s.driftGroup, "release.0g-chain");
    });

    it("installs a verified archive's top directory behind a link, and reuses it without downloading", () => {
        const root = fs.mkdtempSync(path.join(tmp, "root-"));
        const s = renderRelease("h1", { name: "0g-chain", url: `${base}/aristotle-v1.0.6.tar.gz`, sha256: SHA });
        const first = runTool("sh", ["-s"], underRoot(s.install, root));
        assert.equal(first.status, 0, first.output);
        const link = `${root}/opt/nodefleet/0g-chain`;
        assert.equal(fs.readFileSync(`${link}/bin/reth`, "utf8"), "#!/bin/sh\necho reth\n");
        assert.equal(fs.readlinkSync(link), `${root}/opt/nodefleet/releases/0g-chain-${SHA.slice(0, 24)}`);
        const before = downloads();
        const again = runTool("sh", ["-s"], underRoot(s.install, root));
        assert.equal(again.status, 0, again.output);
        assert.equal(downloads(), before, "a verified release must not be downloaded again");
        assert.doesNotMatch(again.output, /downloading/);
    });

    it("a file changed after the install (a swapped binary) is installed again from the archive; the record lists the release's files", () => {
        const root = fs.mkdtempSync(path.join(tmp, "root-"));
        const s = renderRelease("h1", { name: "0g-chain", url: `${base}/aristotle-v1.0.6.tar.gz`, sha256: SHA });
        assert.equal(runTool("sh", ["-s"], underRoot(s.install, root)).status, 0);
        const dest = `${root}/opt/nodefleet/releases/0g-chain-${SHA.slice(0, 24)}`;
        assert.equal(fs.readFileSync(`${root}/var/lib/nodefleet/drift/release.0g-chain/t.release`, "utf8"), `tree\t${dest}\t${root}/opt/nodefleet/0g-chain\n`);
        assert.match(fs.readFileSync(`${dest}/.nodefleet-files.sha256`, "utf8"), /^[0-9a-f]{64} {2}bin\/reth\n[0-9a-f]{64} {2}geth-genesis\.json\n$/);
        fs.writeFileSync(`${dest}/bin/reth`, "#!/bin/sh\necho swapped\n");
        const before = downloads();
        const again = runTool("sh", ["-s"], underRoot(s.install, root));
        assert.equal(again.status, 0, again.output);
        assert.match(again.output, /files under .* differ from the release; installing it again/);
        assert.equal(downloads(), before + 1);
        assert.equal(fs.readFileSync(`${dest}/bin/reth`, "utf8"), "#!/bin/sh\necho reth\n");
    });

    it("a new version removes the release's other versions once it is linked (and no other release's)", () => {
        const root = fs.mkdtempSync(path.join(tmp, "root-"));
        const releases = `${root}/opt/nodefleet/releases`;
        for (const d of ["0g-chain-0123456789abcdef", "0g-chain-extra-0123456789abcdef", "0g-chainx-0123456789abcdef"]) fs.mkdirSync(`${releases}/${d}`, { recursive: true });
        const s = renderRelease("h1", { name: "0g-chain", url: `${base}/aristotle-v1.0.6.tar.gz`, sha256: SHA });
        const run = withSystemdRun(underRoot(s.install, root), "recording");
        const r = runTool("sh", ["-s"], run.script);
        assert.equal(r.status, 0, r.output);
        // Out of its path at once (a rename into .remove.*), its files handed to a unit of their own
        // at idle priority: the install does not wait for a gigabyte's deletion.
        // (both sides sorted: the archive's digest, made by this test, sorts before or after "extra")
        const shown = fs.readdirSync(releases).filter((d) => !d.startsWith(".remove."));
        assert.deepEqual(shown.sort(), [`0g-chain-${SHA.slice(0, 24)}`, "0g-chain-extra-0123456789abcdef", "0g-chainx-0123456789abcdef"].sort());
        assert.match(r.output, /removed the unused .*0g-chain-0123456789abcdef/);
        const trash = fs.readdirSync(releases).filter((d) => d.startsWith(".remove."));
        assert.equal(trash.length, 1);
        assert.match(trash[0]!, /^\.remove\.0g-chain\.[A-Za-z0-9]{6}$/);
        assert.deepEqual(fs.readdirSync(path.join(releases, trash[0]!)), ["0g-chain-0123456789abcdef"]);
        assert.deepEqual(run.calls(), [`--quiet --collect --no-block -p Nice=19 -p IOSchedulingClass=idle rm -rf -- ${releases}/${trash[0]}`]);
        // A run later (the deletion interrupted, or the unit not run yet): handed over again.
        const again = runTool("sh", ["-s"], run.script);
        assert.equal(again.status, 0, again.output);
        assert.equal(run.calls().length, 2);
        // Destroy's removal does not wait for the unit: what is set aside goes with it.
        const destroyed = runTool("sh", ["-s"], underRoot(s.remove, root));
        assert.equal(destroyed.status, 0, destroyed.output);
        assert.deepEqual(fs.readdirSync(releases).filter((d) => d.startsWith(".")), []);
        fs.mkdirSync(`${releases}/0g-chain-0123456789abcdef`);
        // Where systemd-run fails (no systemd), deleted at once.
        const plain = runTool("sh", ["-s"], withSystemdRun(underRoot(s.install, root), "failing").script);
        assert.equal(plain.status, 0, plain.output);
        assert.deepEqual(fs.readdirSync(releases).filter((d) => d.startsWith(".")), []);
    });

    it("keeps an older version while a unit still starts from it (a node not yet moved onto the new one) or a rollout gate keeps one that does, removes it once none does", () => {
        const root = fs.mkdtempSync(path.join(tmp, "root-"));
        const releases = `${root}/opt/nodefleet/releases`;
        const older = `${releases}/0g-chain-0123456789abcdef01234567`;
        fs.mkdirSync(`${older}/bin`, { recursive: true });
        const units = `${root}/etc/systemd/system`;
        fs.mkdirSync(units, { recursive: true });
        fs.writeFileSync(`${units}/geth-validator-2.service`, `[Service]\nExecStart=${older}/bin/geth --datadir /data\n`);
        fs.writeFileSync(`${units}/other.service`, "[Service]\nExecStart=/usr/bin/true\n");
        const s = renderRelease("h1", { name: "0g-chain", url: `${base}/aristotle-v1.0.6.tar.gz`, sha256: SHA });
        const script = withSystemdRun(underRoot(s.install, root).replaceAll("/etc/systemd/system", units), "failing").script;
        const first = runTool("sh", ["-s"], script);
        assert.equal(first.status, 0, first.output);
        assert.ok(fs.existsSync(older), "a unit starts from it: kept");
        assert.match(first.output, /kept .*0g-chain-0123456789abcdef01234567: geth-validator-2\.service still start\(s\) from it/);
        // Its node was configured onto the new version: the next install removes the older one.
        fs.writeFileSync(`${units}/geth-validator-2.service`, `[Service]\nExecStart=${releases}/0g-chain-${SHA.slice(0, 24)}/bin/geth --datadir /data\n`);
        // A rollout's gate still keeps a unit naming it, to roll its node back to (onFailure: rollback).
        const kept = `${root}/var/lib/nodefleet/gate/storage-9.prev`;
        fs.mkdirSync(kept, { recursive: true });
        fs.writeFileSync(`${kept}/f0`, `[Service]\nExecStart=${older}/bin/geth\n`);
        const held = runTool("sh", ["-s"], script);
        assert.equal(held.status, 0, held.output);
        assert.ok(fs.existsSync(older), "a gate would roll back to it: kept");
        assert.match(held.output, /kept .*0g-chain-0123456789abcdef01234567: the rollout gate of storage-9 would roll back to it/);
        fs.rmSync(kept, { recursive: true });
        // A unit staged and not installed (a validator's geth unit after its switch to reth, which
        // its rollback installs again) keeps it too.
        const staged = `${root}/etc/nodefleet/validator-2`;
        fs.mkdirSync(staged, { recursive: true });
        fs.writeFileSync(`${staged}/geth-validator-2.service`, `[Service]\nExecStart=${older}/bin/geth\n`);
        const stagedRun = runTool("sh", ["-s"], script.replaceAll("/etc/nodefleet", `${root}/etc/nodefleet`));
        assert.equal(stagedRun.status, 0, stagedRun.output);
        assert.ok(fs.existsSync(older), "a staged unit names it: kept");
        assert.match(stagedRun.output, /kept .*0g-chain-0123456789abcdef01234567: the staged .*validator-2\/geth-validator-2\.service name\(s\) it/);
        const stagedRemove = runTool("sh", ["-s"], underRoot(s.remove, root).replaceAll("/etc/systemd/system", units).replaceAll("/etc/nodefleet", `${root}/etc/nodefleet`));
        assert.equal(stagedRemove.status, 0, stagedRemove.output);
        assert.ok(fs.existsSync(older), "destroy's removal keeps a version a staged unit names");
        // (It took the current version: installed again.)
        assert.equal(runTool("sh", ["-s"], script.replaceAll("/etc/nodefleet", `${root}/etc/nodefleet`)).status, 0);
        fs.rmSync(staged, { recursive: true });
        const second = runTool("sh", ["-s"], script);
        assert.equal(second.status, 0, second.output);
        assert.ok(!fs.existsSync(older));
        assert.match(second.output, /removed the unused .*0g-chain-0123456789abcdef01234567/);
        // And destroy's removal takes every version no unit names (the nodes' removals ran first).
        fs.mkdirSync(older);
        fs.rmSync(`${units}/geth-validator-2.service`);
        const removed = runTool("sh", ["-s"], underRoot(s.remove, root).replaceAll("/etc/systemd/system", units));
        assert.equal(removed.status, 0, removed.output);
        assert.deepEqual(fs.readdirSync(releases), []);
    });

    it("refuses an archive whose sha256 differs, installing nothing and keeping the current link", () => {
        const root = fs.mkdtempSync(path.join(tmp, "root-"));
        const good = renderRelease("h1", { name: "0g-chain", url: `${base}/aristotle-v1.0.6.tar.gz`, sha256: SHA });
        assert.equal(runTool("sh", ["-s"], underRoot(good.install, root)).status, 0);
        const wrong = "0".repeat(64);
        const bad = renderRelease("h1", { name: "0g-chain", url: `${base}/aristotle-v1.0.6.tar.gz`, sha256: wrong });
        const r = runTool("sh", ["-s"], underRoot(bad.install, root));
        assert.equal(r.status, 1);
        assert.match(r.output, new RegExp(`sha256 mismatch .*: expected ${wrong}, got ${SHA}; nothing was installed`));
        assert.deepEqual(fs.readdirSync(`${root}/opt/nodefleet/releases`), [`0g-chain-${SHA.slice(0, 24)}`]);
        assert.equal(fs.readlinkSync(`${root}/opt/nodefleet/0g-chain`), `${root}/opt/nodefleet/releases/0g-chain-${SHA.slice(0, 24)}`);
    });

    it("fails on a download error without leaving a partial directory", () => {
        const root = fs.mkdtempSync(path.join(tmp, "root-"));
        const s = renderRelease("h1", { name: "zgs", url: `${base}/missing.tar.gz`, sha256: SHA });
        const r = runTool("sh", ["-s"], underRoot(s.install, root));
        assert.notEqual(r.status, 0);
        assert.deepEqual(fs.readdirSync(`${root}/opt/nodefleet/releases`), []);
    });

    it("remove deletes its version and the link only while the link points to it", () => {
        const root = fs.mkdtempSync(path.join(tmp, "root-"));
        const s = renderRelease("h1", { name: "0g-chain", url: `${base}/aristotle-v1.0.6.tar.gz`, sha256: SHA });
        assert.equal(runTool("sh", ["-s"], underRoot(s.install, root)).status, 0);
        // A newer version took over the link: removing the old one keeps the link.
        const link = `${root}/opt/nodefleet/0g-chain`;
        fs.mkdirSync(`${root}/opt/nodefleet/releases/0g-chain-newer`);
        fs.rmSync(link);
        fs.symlinkSync(`${root}/opt/nodefleet/releases/0g-chain-newer`, link);
        assert.equal(runTool("sh", ["-s"], underRoot(s.remove, root)).status, 0);
        assert.equal(fs.readlinkSync(link), `${root}/opt/nodefleet/releases/0g-chain-newer`);
        assert.ok(!fs.existsSync(`${root}/opt/nodefleet/releases/0g-chain-${SHA.slice(0, 24)}`));
    });
});
