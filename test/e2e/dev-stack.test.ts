// E2E tier: the README's main job on real hosts (system containers: lab/vm.sh). Boots them, runs
// `scripts/dev.sh up` (pulumi up on the dev stack over real SSH), then checks from outside
// the hosts: units active under systemd, only the intended ports answering from another host
// address (the lab network), a second `up` that changes nothing, and a destroy that leaves
// no nodefleet firewall behind. Ends with the hosts shut down and no container (nor pulumi plugin) left running.
import { after, describe } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { Steps } from "../support/steps";
import { ROOT, failureOf, sh, stateDir } from "../support/cli";
import { hostsScenario } from "../scenarios/hosts";
import { storageAndSequencerScenario } from "../scenarios/storage-and-sequencer";
import { sequencerScenario } from "../scenarios/sequencer";
import { validatorScenario, type ValidatorChain } from "../scenarios/validator";
import { switchScenario } from "../scenarios/switch";
import { monitoringScenario } from "../scenarios/monitoring";
import { rolloutScenario } from "../scenarios/rollout";
import { upgradeScenario } from "../scenarios/upgrade";
import { switchRolloutScenario } from "../scenarios/switch-rollout";
import { DEV, EXPECTED, networkConsensus, onVm, timed, VM, vmnetHeight, watchSshConnections } from "../support/lab";

describe("dev stack on the lab's hosts", { timeout: 90 * 60_000 }, () => {
    /** What the validator scenario saw, for the switch after it. */
    const chain: ValidatorChain = { followedHead: 0 };
    // Every test runs in every run (test/support/steps.ts); each says how long it took, and where
    // validator-1's network then stands.
    const steps = new Steps(undefined, networkWatch());
    after(() => {
        sh("bash", [VM, "down"], { allowFail: true });
        sh("bash", [path.join(ROOT, "lab/artifacts.sh"), "stop"], { allowFail: true });
        sh("bash", [path.join(ROOT, "lab/devchain.sh"), "stop"], { allowFail: true });
    });

    steps.test("the main job brings the dev fleet up with pulumi up", { timeout: 30 * 60_000 }, () => {
        const ssh = watchSshConnections();
        const r = timed("scripts/dev.sh up (image if not cached, boot, pulumi up)", () => sh("bash", [DEV, "up"], { allowFail: true, timeoutMs: 30 * 60_000 }));
        const sshPeaks = ssh.stop();
        console.log(`# SSH connections open at once during the up, per VM: ${JSON.stringify(sshPeaks)}`);
        // Kept whatever happened: the key test below reads it, and a failed run is read from it.
        fs.writeFileSync(path.join(ROOT, ".state", "e2e-up.log"), r.output);
        assert.equal(r.status, 0, `scripts/dev.sh up exited ${r.status}:\n${failureOf(r.output, 6000)}`);
        // The command provider closes each step's connection (the lab's patch, docs/toolchain.md):
        // dev-1 runs two chains side by side (storage, sequencer), dev-2 one.
        for (const [vm, peak] of Object.entries(sshPeaks)) assert.ok(peak >= 1 && peak <= 2, `${vm}: ${peak} SSH connections open at once during the up`);
        // On a fresh checkout this creates everything; on a re-run it may change nothing. What
        // the hosts then run is checked from outside by the tests below. A failure is shown by
        // its own lines (the whole log is in .state/e2e-up.log), so that CI's excerpt names it.
        // The command provider's "Dial 1/10 failed: retrying" is a connection tried again (sshd in
        // a host under load); what it then ran is judged by the lines around it.
        const redial = /\bDial \d+\/\d+ failed: retrying$/;
        const lines = r.output.split("\n");
        const redials = lines.filter((l) => redial.test(l)).length;
        if (redials > 0) console.log(`# pulumi tried ${redials} SSH connection(s) again`);
        const failures = lines.filter((l) => /errored|failed/.test(l) && !redial.test(l));
        assert.deepEqual(failures.map((l) => l.slice(0, 600)).slice(0, 20), [], "lines of scripts/dev.sh up that say errored or failed");
        assert.match(r.output, /Resources:\n(\s+\+ \d+ created\n)?\s+(\d+ unchanged|\+ \d+ created)/, r.output.slice(-3000));
        // A clean run prints no warning an operator has to learn to ignore: the
        // plugins are where Pulumi looks for them, and no operation is left pending.
        assert.doesNotMatch(r.output, /from \$PATH|pending operations?/, "a plugin or pending-operation warning");
    });

    // Right after the up that made the stack's outputs: the program reads its own previous
    // outputs through a stack reference, which a refresh reads anew; that is no drift.
    steps.test("the drift check passes on the untouched fleet right after the up that made its outputs", {}, () => {
        const r = timed("scripts/dev.sh drift", () => sh("bash", [DEV, "drift"], { allowFail: true, timeoutMs: 600_000 }));
        assert.equal(r.status, 0, failureOf(r.output));
        assert.doesNotMatch(r.output, /::error/);
        assert.match(r.output, /\d+ unchanged/);
    });

    // The scenarios, in this order: each starts from the fleet as the one before it leaves it.
    hostsScenario(steps);
    storageAndSequencerScenario(steps);
    sequencerScenario(steps);
    rolloutScenario(steps);
    upgradeScenario(steps);
    validatorScenario(steps, chain);
    switchScenario(steps, chain);
    switchRolloutScenario(steps);

    // Near the end, on the config the last up used: its own up adds the monitoring section alone.
    monitoringScenario(steps);

    steps.test("pulumi destroy removes the nodefleet firewall and keeps the data", {}, () => {
        const r = timed("pulumi destroy", () => sh("bash", [DEV, "pulumi", "destroy", "--stack", "dev", "--yes", "--skip-preview", "--non-interactive"]));
        assert.match(r.output, /firewall: removed/);
        for (const vm of Object.keys(EXPECTED)) {
            const check = onVm(vm, "systemctl list-unit-files 'zgs-*' 'aztec-*' 'geth-*' 'reth-*' '0gchaind-*' --no-legend | grep -q . && echo node-unit-present; test -d /etc/nodefleet/sequencer-1 && echo key-dir-present; nft list table inet nodefleet >/dev/null 2>&1 && echo table-present; test -e /etc/systemd/system/nodefleet-firewall.service && echo unit-present; test -d /etc/nodefleet/firewall && echo dir-present; ls /opt/nodefleet/releases | grep -q . && echo release-present; ls /opt/nodefleet | grep -v releases && echo link-present; ls -d /data/*", true);
            assert.doesNotMatch(check.output, /present/, `${vm}: ${check.output}`);
            // Chain data directories are never deleted by destroy.
            assert.match(check.output, /\/data\//);
        }
    });

    steps.test("shuts the hosts down cleanly with no container left running, nor a killed run's pulumi plugin", {}, () => {
        // Its own hosts: the first-boot file's (dev-3, dev-4) and the workflows' runner host (dev-5)
        // may still be running beside it (scripts/lib/e2e-lane.sh); the lane powers everything off
        // when every file has ended.
        const vms = path.join(stateDir(), "vm");
        const own = fs.readdirSync(vms).filter((d) => d in EXPECTED);
        for (const vm of own) {
            const stop = sh("bash", [VM, "stop", vm]);
            assert.match(stop.output, new RegExp(`${vm}: powered off`), `${vm} did not power off cleanly:\n${stop.output}`);
        }
        const ps = sh("pgrep", ["-af", `systemd-nspawn .*-D ${vms}/dev-[12]/`], { allowFail: true });
        const pids = own.flatMap((d) => ["supervisor.pid", "nspawn.pid"].map((f) => path.join(vms, d, f)));
        assert.ok(pids.every((p) => !fs.existsSync(p)), "pid files are removed");
        assert.equal(ps.output.trim(), "", `a host's container still running:\n${ps.output}`);
        const mounts = fs.readFileSync("/proc/mounts", "utf8").split("\n").filter((l) => own.some((d) => l.includes(`${vms}/${d}/`)));
        assert.deepEqual(mounts, [], "the hosts' data filesystems are unmounted");
        // Nor a plugin of the pulumi runs this scenario killed (their dynamic provider outlived them
        // once): those of its own runs, which carry its state directory in their environment; the
        // cli tier's runs of this checkout may still be going beside it (scripts/test.sh).
        const plugins = sh("pgrep", ["-af", path.join(ROOT, "node_modules/@pulumi/pulumi/cmd/dynamic-provider")], { allowFail: true });
        const ours = plugins.output.split("\n").filter((line) => line.trim() !== "" && ofThisLane(Number(line.split(" ")[0])));
        assert.deepEqual(ours, [], `pulumi's dynamic provider still running:\n${plugins.output}`);
    });
});

/** Whether a process runs with this lane's state directory (unreadable, or gone: counted as its, unless gone). */
function ofThisLane(pid: number): boolean {
    try {
        return fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`NODEFLEET_STATE=${stateDir()}`);
    } catch (e) {
        return (e as NodeJS.ErrnoException).code !== "ENOENT";
    }
}

/**
 * After each test: the height validator-1's network (beacond-2061) is at, as the runner's validator
 * answers. Where it made no block for a minute or more since the last test after which it grew, both
 * validators' consensus state and warnings, once per halt: a halt a later test fails on is then
 * placed in the log between two tests, with what the daemons held when it was first seen.
 */
function networkWatch(): (name: string) => string | null {
    let last: { height: number; at: number } | undefined;
    let told = false;
    return (name) => {
        const after = `after: ${name.slice(0, 80)}`;
        let height: number;
        try {
            height = vmnetHeight(5);
        } catch {
            return `# network beacond-2061: no answer ${after}`; // before the main up, or the runner's validator gone
        }
        const now = Date.now() / 1000;
        const line = `# network beacond-2061 at height ${height} ${after}`;
        if (last === undefined || height > last.height) {
            last = { height, at: now };
            told = false;
            return line;
        }
        if (told || now - last.at < 60) return line;
        told = true;
        return `${line}: no block for ${Math.round(now - last.at)} s\n${networkConsensus()}`;
    };
}
