// Health-gated rollouts on the dev VMs (issue 42), a scenario of the dev stack's, on the fleet as
// the storage and sequencer scenario leaves it. A `rollout` section turns the gates on (their
// first run only records each node's first deploy); a new storage release (the lab's zgs_node
// repacked with one more file: another sha256) restarts storage-1 onto its version's directory
// and its gate waits for it to be healthy; a release whose zgs_node runs but never serves (a
// script that sleeps) halts the up at storage-1's gate with its diagnosis, while the other nodes
// run on, healthy; the release set back, the next up finishes. Then the section is taken out
// again (the gates' removal runs nothing) so that the scenarios after this one see the fleet as
// before. What it cannot show with the dev fleet's one storage node: a later batch of the same
// role held back (the unit tier checks that graph: test/unit/rollout-gates.test.ts).
import * as assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT, sh } from "../support/cli";
import type { Budget } from "../support/budget";
import { lastUpConfig, onVm, statusJson, timed, upWith } from "../support/lab";
import { freePort } from "../support/process";

const SHIPPED = "zgs_node-v1.1.0";
const RELEASE_LINE = "        url: http://10.0.2.2:8700/zgs_node-v1.1.0.tar.gz\n        sha256File: .state/artifacts/current/SHA256SUMS\n";

/** The lab's zgs_node release repacked: `change` edits its unpacked tree. Returns the archive's sha256. */
function repack(out: string, change: (top: string) => void): string {
    const work = fs.mkdtempSync(path.join(path.dirname(out), "work-"));
    sh("tar", ["-xzf", path.join(ROOT, ".state/artifacts/current", `${SHIPPED}.tar.gz`), "-C", work]);
    change(path.join(work, SHIPPED));
    sh("tar", ["-czf", out, "-C", work, SHIPPED]);
    fs.rmSync(work, { recursive: true, force: true });
    return crypto.createHash("sha256").update(fs.readFileSync(out)).digest("hex");
}

export function rolloutScenario(budget: Budget): void {
    const devYaml = () => fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
    budget.test("rollouts: with a rollout section a new storage release restarts storage-1 behind its gate; a release that never serves halts the up at the gate, naming the node and its diagnosis, the other nodes running on; set back, the next up finishes", {
        cost: 900, optional: true, timeout: 40 * 60_000,
        // Not in CI until it has passed whole on the VMs: its first run there passed its first two ups
        // and found the gates' tools colliding on a host (fixed: a directory per node), its second
        // failed on that collision; it has not run since the fix (2026-11-28, docs/rollouts.md).
        unless: () => (process.env.CI === "true" ? "the rollout scenario is not run in CI until it has passed whole on the dev VMs (docs/rollouts.md)"
            : lastUpConfig(devYaml()) === devYaml() ? "the storage and sequencer scenario did not run: the fleet is not in the state this one starts from" : null),
    }, async () => {
        // The config of the last up, as text: this scenario's own ups replace the last edit.
        const snapshot = lastUpConfig(devYaml());
        const base = () => snapshot;
        const dir = fs.mkdtempSync(path.join(ROOT, ".state", "rollout-"));
        const good = repack(path.join(dir, "zgs-good.tar.gz"), (top) => fs.writeFileSync(path.join(top, "ROLLOUT"), "the same zgs_node, another archive\n"));
        const bad = repack(path.join(dir, "zgs-bad.tar.gz"), (top) => fs.writeFileSync(path.join(top, "zgs_node"), "#!/bin/sh\n# runs, never serves\nexec sleep 100000\n", { mode: 0o755 }));
        const port = await freePort();
        const server: ChildProcess = spawn("python3", ["-m", "http.server", "--bind", "127.0.0.1", String(port), "--directory", dir], { stdio: "ignore" });
        try {
            const rollout = (within: number) => `    rollout:\n      roles:\n        storage: { healthyWithinSeconds: ${within}, soakSeconds: 20 }\n`;
            const withRollout = (within: number, release?: { file: string; sha256: string }) => () => {
                let out = base().replace(/^ {4}releases:\n/m, `${rollout(within)}    releases:\n`);
                if (release) {
                    assert.ok(out.includes(RELEASE_LINE), "the dev config's zgs release");
                    out = out.replace(RELEASE_LINE, `        url: http://10.0.2.2:${port}/${release.file}\n        sha256: "${release.sha256}"\n`);
                }
                return out;
            };
            const execStart = () => onVm("dev-1", "systemctl show -p ExecStart --value zgs-storage-1.service").output;
            // The fleet running (the storage scenario's last test stops storage-1 to see it stop cleanly).
            onVm("dev-1", "systemctl start zgs-storage-1.service");

            // On: the gates are made, and their first run records each node's first deploy.
            const on = timed("pulumi up (rollout on)", () => upWith(withRollout(300)));
            assert.equal(on.status, 0, on.output.slice(-4000));
            for (const node of ["storage-1", "sequencer-1", "validator-1"]) assert.match(on.output, new RegExp(`gate ${node}: its first deploy, not gated`), node);
            assert.match(on.output, /rollout storage: 1 node\(s\) in 1 batch\(es\) of up to 1 \(25% of the role\), each healthy within 300 s and for 20 s/);

            // A new release: storage-1 restarts onto it, and its gate waits for it to be healthy.
            const started = Date.now();
            const upgrade = timed("pulumi up (a new storage release, gated)", () => upWith(withRollout(300, { file: "zgs-good.tar.gz", sha256: good })));
            assert.equal(upgrade.status, 0, upgrade.output.slice(-4000));
            assert.match(upgrade.output, /storage storage-1: restarted zgs-storage-1\.service/);
            const gated = upgrade.output.match(/gate storage-1: healthy after (\d+) s, and for (\d+) s since/);
            assert.ok(gated, upgrade.output.slice(-4000));
            console.log(`# the new release's up: ${Math.round((Date.now() - started) / 1000)} s; storage-1 healthy ${gated[1]} s into its gate, then ${gated[2]} s of soak`);
            assert.match(execStart(), new RegExp(`/opt/nodefleet/releases/zgs-${good.slice(0, 24)}/zgs_node`));
            assert.match(upgrade.output, /release zgs: kept \S+: zgs-storage-1\.service still start\(s\) from it/, "the old version stays until the node moved");
            assert.doesNotMatch(upgrade.output, /gate (sequencer|validator)-1:/, "nodes that did not change are not gated again");

            // A release that never serves: the up stops at storage-1's gate, naming it and why.
            const broken = timed("pulumi up (a release that never serves)", () => upWith(withRollout(90, { file: "zgs-bad.tar.gz", sha256: bad })));
            assert.notEqual(broken.status, 0, broken.output.slice(-4000));
            assert.match(broken.output, /gate storage-1: not healthy after \d+ s \(\d+ checks\); the rollout stops here/);
            assert.match(broken.output, /remedy: /);
            const during = statusJson();
            const row = (name: string) => during.report.nodes.find((n: any) => n.node === name);
            assert.equal(row("storage-1").healthy, false, JSON.stringify(row("storage-1")));
            assert.deepEqual([row("sequencer-1").healthy, row("validator-1").healthy], [true, true], "the other nodes run on, healthy");

            // Set back: the next up restarts storage-1 onto the release it ran, and its gate passes.
            const fixed = timed("pulumi up (the release set back)", () => upWith(withRollout(300, { file: "zgs-good.tar.gz", sha256: good })));
            assert.equal(fixed.status, 0, fixed.output.slice(-4000));
            assert.match(fixed.output, /gate storage-1: healthy after \d+ s/);
            assert.equal(statusJson().code, 0, "all healthy again");

            // Off again, on the release the fleet had: the scenarios after this one see it as before.
            const off = timed("pulumi up (rollout off, the shipped release)", () => upWith(base));
            assert.equal(off.status, 0, off.output.slice(-4000));
            assert.match(execStart(), /\/opt\/nodefleet\/releases\/zgs-[0-9a-f]{24}\/zgs_node/);
            assert.doesNotMatch(execStart(), new RegExp(good.slice(0, 24)));
        } finally {
            server.kill();
        }
    });
}
