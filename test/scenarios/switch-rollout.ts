// The geth → reth switch under a `rollout` section on the lab's hosts (docs/rollouts.md, "What is
// rolled"), on the fleet as the switch scenario leaves it (validator-1 on reth). validator-2 joins
// on dev-1: a follower of validator-1's network with a key of its own that no validator set holds
// (lab/sim/release/vmnet/README.md), so it holds no power, on another archive of the 0g-chain
// release. The section gates the validators one at a time, validator-1 first, with
// `onFailure: rollback`; in the same `up` validator-1's switch is rolled back to geth, and its
// gate keeps geth's files. Then:
// - the switch to reth again (a new attempt), validator-2 moved to the shipped release: validator-1's
//   gate starts once the switch's fourteen steps are done (its last step's record is on the host
//   when the gate's process first shows); a watcher on the host stops reth as the gate starts (a
//   crash systemd does not restart): the gate fails, refuses to roll back across the switch (the
//   switch state it pinned changed), and the up stops there: validator-2 untouched, validator-1
//   left on reth with nothing put back;
// - reth started again (the operator's fix), the same config: the gate passes and keeps reth's
//   files, and only then (the hosts share one clock) validator-2 restarts on the new release, behind a gate
//   of its own;
// - the section and validator-2 taken out: validator-1 on reth as the switch scenario left it.
// The network halts while validator-1 (40% of its power) is down: its longest gap between blocks is
// printed, and every height committed across the scenario carries validator-1's vote.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT } from "../support/cli";
import type { Steps } from "../support/steps";
import { lastUpConfig, networkConsensus, onV, onVm, timed, until, upWith, validator1Address, withSwitch } from "../support/lab";
import { networkBlocks } from "./rollout";
import { servedPrevChainRelease } from "./upgrade";

const VALIDATOR_KEY_LINE = "          validatorKeySecret: devValidatorKey\n";
const SWITCH_DIR = "/data/validator-1/.nodefleet-switch";
const KEPT = "/var/lib/nodefleet/gate/validator-1.prev/manifest.json";
/** Where the host-side watcher records what it saw when validator-1's gate started. */
const SEEN = "/run/nodefleet-test/gate-seen";
const SOAK = 30;
const WITHIN = 45;

/**
 * A unit's command line (ExecStart's argv), its main process and when it last started (seconds; the
 * lab's hosts are containers on one kernel: one clock).
 */
const unitOn = (host: string, name: string) => {
    const [exec, pid, started] = onVm(host, `systemctl show -p ExecStart --value ${name}; systemctl show -p MainPID --value ${name}; date -d "$(systemctl show -p ActiveEnterTimestamp --value ${name})" +%s`).output.trim().split("\n");
    return { argv: /argv\[\]=([^;]*)/.exec(exec!)?.[1]?.trim() ?? exec!, pid: pid!, started: Number(started) };
};

/**
 * validator-2's entry: validator-1's network and bootnode, on the other host (with validator-1's
 * host, the network's other node refused one of the two: CometBFT accepts one peer per address
 * unless `p2p.allow_duplicate_ip`, docs/roles.md), ports of its own.
 */
const validator2 = (release: string) => [
    "      - name: validator-2",
    "        role: validator",
    "        host: dev-1",
    `        release: ${release}`,
    "        validator:",
    "          portPrefix: 57",
    '          bootnode: "enode://79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8@10.77.0.12:56303"',
    "          validatorKeySecret: devValidatorKey2",
    "          consensusRpcUrl: http://127.0.0.1:8667",
    '          consensusPeers: ["b3581dcebce0d9bf849de9abf619bed44a35dc07@10.0.2.2:26756"]',
    "          publicIp: 10.77.0.11",
    "",
].join("\n");

export function switchRolloutScenario(steps: Steps): void {
    const devYaml = () => fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
    steps.test("the switch under a rollout: validator-1's gate runs after the switch's steps and holds the next batch (validator-2, a follower of its network); reth down during the gate halts the rollout, and the rollback across the switch is refused on the host; reth started again, the gate passes and validator-2 restarts after it", {
        timeout: 30 * 60_000,
        unless: () => (/^ {10}switch: migrate$/m.test(lastUpConfig(devYaml())) ? null : "validator-1 is not on reth: the switch scenario did not finish"),
    }, async () => {
        const snapshot = lastUpConfig(devYaml());
        const attempt = Number(/^ {10}switchAttempt: (\d+)$/m.exec(snapshot)?.[1]);
        assert.ok(attempt > 0, "the switch scenario's last attempt");
        const address = validator1Address();
        const chain = await servedPrevChainRelease(fs.mkdtempSync(path.join(ROOT, ".state", "switch-rollout-")));
        try {
            const rollout = `    rollout:\n      maxOfflinePower: "40%"\n      order: [validator-1]\n      roles:\n        validator: { healthyWithinSeconds: ${WITHIN}, soakSeconds: ${SOAK}, onFailure: rollback }\n`;
            /** validator-1 switched as given, the section on, validator-2 on `release`. */
            const config = (client: "geth" | "reth", sw: "rollback" | "migrate", n: number, release: string) => (y: string) => {
                let out = withSwitch(client, sw, n)(y);
                assert.ok(out.includes(VALIDATOR_KEY_LINE), "the dev config's validator key line");
                out = out.replace(VALIDATOR_KEY_LINE, `${VALIDATOR_KEY_LINE}          consensusRpcUrl: http://127.0.0.1:8667\n`);
                const end = out.indexOf("  # A public test key");
                assert.ok(end > 0 && out.lastIndexOf("      - name: validator-1\n", end) > 0, "validator-1 the last node of the dev config");
                out = out.slice(0, end) + validator2(release) + out.slice(end);
                return out.replace(/^ {4}releases:\n/m, `${rollout}    releases:\n${chain.entry}`);
            };
            const up = (label: string, edit: (y: string) => string) => timed(`pulumi up (${label})`, () => upWith(edit, [], 20 * 60_000));
            const why = (output: string) => `${output.split("\n").filter((l) => /\bgate [a-z0-9-]+:|error|^\s+[a-z]+(-[a-z]+)+: /.test(l)).slice(0, 40).join("\n")}\n…\n${output.slice(-1500)}`;
            const heightAtStart = networkBlocks().last;

            // 1. The section on, validator-1 back on geth, validator-2 joining (its first deploy).
            const joined = up("the rollout section on, validator-1's switch rolled back, validator-2 joins", config("geth", "rollback", attempt, "0g-chain-prev"));
            assert.equal(joined.status, 0, why(joined.output));
            assert.match(joined.output, /rollout validator: 2 node\(s\) in 2 batch\(es\)/);
            assert.match(joined.output, /rollout: voting power of network beacond-2061: 80000000000; validator-1 32000000000 \(40\.0%\), validator-2 0 \([0-9.]+%\), not in the validator set/);
            assert.match(joined.output, /gate validator-2: its first deploy, not gated/);
            assert.equal(JSON.parse(onV(`cat ${SWITCH_DIR}/state.json`).output).client, "geth");
            const keptGeth = JSON.parse(onV(`cat ${KEPT}`).output) as { path: string; present?: boolean; pinned?: boolean }[];
            assert.ok(keptGeth.some((e) => e.path === "/etc/systemd/system/geth-validator-1.service" && e.present), `geth's unit kept: ${JSON.stringify(keptGeth)}`);
            assert.ok(keptGeth.some((e) => e.path === `${SWITCH_DIR}/state.json` && e.pinned), "the switch state pinned");
            const keptAt = onV(`stat -c %Y ${KEPT}; sha256sum < ${KEPT}`).output;
            assert.match(unitOn("dev-1", "0gchaind-validator-2.service").argv, new RegExp(`/opt/nodefleet/releases/0g-chain-prev-${chain.sha256.slice(0, 24)}/bin/beacond`));

            // The network commits again (validator-1 signing on geth) before the switch stops it.
            const afterJoin = networkBlocks().last;
            await until(`the network to commit past height ${afterJoin + 1} after the rollback`, () => networkBlocks().last > afterJoin + 1, 3 * 60_000, networkConsensus);

            // 2. The switch to reth, validator-2 to the shipped release; reth stopped as the gate starts.
            const v2 = { geth: unitOn("dev-1", "geth-validator-2.service"), beacond: unitOn("dev-1", "0gchaind-validator-2.service") };
            const watcher = [
                `mkdir -p ${path.dirname(SEEN)}; rm -f ${SEEN}`,
                "until pgrep -f 'nodefleet_gate[.]py validator validator-1 ' >/dev/null; do sleep 0.2; done",
                `{ date +%s; test -e ${SWITCH_DIR}/migration/s14-verify.json && echo s14-done || echo s14-missing; } > ${SEEN}.new && mv ${SEEN}.new ${SEEN}`,
                "systemctl stop reth-validator-1.service",
            ].join("\n");
            onV(`systemctl stop nodefleet-test-gate-watch 2>/dev/null; echo ${Buffer.from(watcher + "\n").toString("base64")} | base64 -d > /run/nodefleet-test-gate-watch.sh && systemd-run --unit=nodefleet-test-gate-watch --collect sh /run/nodefleet-test-gate-watch.sh`);
            const t0 = Number(onV("date +%s").output.trim());
            const halted = up("the switch to reth, validator-2 to the shipped release; reth stopped as validator-1's gate starts", config("reth", "migrate", attempt + 1, "0g-chain"));
            assert.notEqual(halted.status, 0, why(halted.output));
            const [seenAt, seen] = onV(`cat ${SEEN}`).output.trim().split("\n");
            assert.equal(seen, "s14-done", "the switch's last step was done when the gate started");
            const s14At = Number(onV(`stat -c %Y ${SWITCH_DIR}/migration/s14-verify.json`).output.trim());
            assert.ok(t0 <= s14At && s14At <= Number(seenAt), `the switch's last step (${s14At}) in this up (from ${t0}), before the gate started (${seenAt})`);
            assert.match(halted.output, new RegExp(`gate validator-1: not healthy after \\d+ s \\(\\d+ checks\\); the rollout stops here`), why(halted.output));
            assert.match(halted.output, /reth-validator-1\.service is "?inactive/, "the gate's diagnosis names reth down");
            assert.match(halted.output, new RegExp(`gate validator-1: not rolled back: [^\\n]*${SWITCH_DIR.replace(/\./g, "\\.")}/state\\.json changed since it last passed its gate`), why(halted.output));
            assert.doesNotMatch(halted.output, /gate validator-1: rolled back to/);
            assert.equal(JSON.parse(onV(`cat ${SWITCH_DIR}/state.json`).output).client, "reth", "left on reth");
            assert.equal(onV("test -e /etc/systemd/system/geth-validator-1.service || echo absent; test -e /var/lib/nodefleet/gate/validator-1.rolled-back && echo marked; true").output.trim(), "absent", "geth's unit not put back, no rolled-back mark");
            assert.equal(onV(`stat -c %Y ${KEPT}; sha256sum < ${KEPT}`).output, keptAt, "what the gate keeps: unchanged by the failed gate");
            assert.deepEqual({ geth: unitOn("dev-1", "geth-validator-2.service"), beacond: unitOn("dev-1", "0gchaind-validator-2.service") }, v2, "the next batch (validator-2) untouched");

            // 3. reth started again: the same config passes validator-1's gate, then validator-2 restarts.
            onV("systemctl start reth-validator-1.service");
            await until("validator-1 to answer on reth", () => onV("curl -s -m 2 -H 'Content-Type: application/json' -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}' http://127.0.0.1:56545", true).output.includes("result"), 60_000);
            const passed = up("reth started again, the same config", config("reth", "migrate", attempt + 1, "0g-chain"));
            assert.equal(passed.status, 0, why(passed.output));
            assert.match(passed.output, /gate validator-1: healthy after \d+ s, and for \d+ s since/);
            assert.match(passed.output, /gate validator-2: healthy after \d+ s, and for \d+ s since/);
            const keptReth = JSON.parse(onV(`cat ${KEPT}`).output) as { path: string; present?: boolean }[];
            assert.ok(keptReth.some((e) => e.path === "/etc/systemd/system/reth-validator-1.service" && e.present), "reth's unit kept: what a later failure rolls back to");
            const passedAt = Number(onV(`stat -c %Y ${KEPT}`).output.trim());
            const now2 = { geth: unitOn("dev-1", "geth-validator-2.service"), beacond: unitOn("dev-1", "0gchaind-validator-2.service") };
            for (const [what, u] of Object.entries(now2)) {
                assert.match(u.argv, new RegExp(`/opt/nodefleet/releases/0g-chain-[0-9a-f]{24}/bin/${what}`), `validator-2's ${what} on the shipped release`);
                assert.ok(u.started >= passedAt, `validator-2's ${what} restarted at ${u.started}, after validator-1's gate passed at ${passedAt}`);
            }
            const during = networkBlocks(heightAtStart, address);
            console.log(`# network beacond-2061 across the switch under a rollout: heights ${heightAtStart}..${during.last}, longest gap between blocks (the halt) ${during.longestGap.toFixed(1)} s; commits without validator-1: ${during.unsigned.length}`);
            assert.ok(during.last > heightAtStart);
            assert.deepEqual(during.unsigned, [], "heights committed without validator-1's vote");

            // 4. The section and validator-2 out: validator-1 on reth, as the switch scenario left it.
            const off = up("the rollout section and validator-2 out", withSwitch("reth", "migrate", attempt + 1));
            assert.equal(off.status, 0, why(off.output));
            // The pattern bracketed: pgrep would otherwise find the shell that runs it, whose command line holds it.
            assert.equal(onVm("dev-1", "test -e /etc/systemd/system/0gchaind-validator-2.service && echo unit; pgrep -f '/data/validator-[2]/' >/dev/null && echo process; true").output.trim(), "", "validator-2 removed");
            assert.equal(JSON.parse(onV(`cat ${SWITCH_DIR}/state.json`).output).client, "reth");
        } finally {
            chain.stop();
            onV("systemctl stop nodefleet-test-gate-watch 2>/dev/null; true", true);
        }
    });
}
