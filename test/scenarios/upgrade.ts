// An upgrade at an agreed height on the lab's network (docs/rollouts.md, "Upgrades at a height"):
// validator-1 (40% of its network's power: the network commits nothing without it) first runs
// another archive of the 0g-chain release (`0g-chain-prev`, a normal release change); an `up` with
// `upgrade: {release: 0g-chain, height: H}` (H a minute or so ahead) installs the shipped release and
// arms the watcher, restarting nothing; at H the watcher stops beacond and starts geth, then beacond,
// on the shipped release, which signs H+1. The commit gap across H and the heights validator-1 did
// not sign are measured and printed. Then: the release it left named again is refused on the host;
// a height the network has passed is refused at preview; the config back to the shipped release
// (the snapshot) restarts nothing. The fleet is left as the scenario found it.
import * as assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT, failureOf } from "../support/cli";
import { votedFor } from "../support/cometbft";
import { freePort } from "../support/process";
import type { Steps } from "../support/steps";
import { lastUpConfig, networkConsensus, onV, previewWith, timed, upWith, validator1Address, vmnetHeight, vmnetRpc } from "../support/lab";
import { networkBlocks, repack } from "./rollout";

const VALIDATOR_KEY_LINE = "          validatorKeySecret: devValidatorKey\n";
const NODE_RELEASE = "        release: 0g-chain\n";
const RECORD = "/data/validator-1/.nodefleet-switch/upgrade.json";
/**
 * Blocks between the height read before the staging up and the upgrade height (a block every 5 s):
 * twice the blocks the up before it took, and four more, so that the up ends well before the height
 * on a busy machine too (at least eight) and the drill does not wait minutes on an idle one.
 */
const blocksAhead = (upSeconds: number) => Math.max(8, Math.ceil((2 * upSeconds) / 5) + 4);

const blockTime = (h: number) => Date.parse(vmnetRpc(`/block?height=${h}`).block.header.time) / 1000;
/**
 * A unit's command line (ExecStart's argv: its runtime fields read n/a after a daemon-reload), its
 * main process and when it last started (monotonic µs of its host).
 */
const unit = (name: string) => {
    const [exec, pid, started] = onV(`systemctl show -p ExecStart --value ${name}; systemctl show -p MainPID --value ${name}; systemctl show -p ActiveEnterTimestampMonotonic --value ${name}`).output.trim().split("\n");
    return { argv: /argv\[\]=([^;]*)/.exec(exec!)?.[1]?.trim() ?? exec!, pid: pid!, started: started! };
};

/**
 * Another archive of the 0g-chain release (the same change as the rollout scenario's repack of it:
 * its cached copy), packed into `dir` and served from there to the hosts (10.0.2.2 from a host): its
 * sha256, its `releases` entry `0g-chain-prev` (text for the dev config) and the server's stop.
 */
export async function servedPrevChainRelease(dir: string): Promise<{ sha256: string; entry: string; stop: () => void }> {
    const sha256 = repack(path.join(dir, "chain.tar.gz"), (top) => fs.writeFileSync(path.join(top, "ROLLOUT"), "another archive\n"), "aristotle-v1.0.6", "Aristotle-v1.0.6");
    const port = await freePort();
    const server: ChildProcess = spawn("python3", ["-m", "http.server", "--bind", "127.0.0.1", String(port), "--directory", dir], { stdio: "ignore" });
    const entry = ["      0g-chain-prev:", `        url: http://10.0.2.2:${port}/chain.tar.gz`, `        sha256: "${sha256}"`, "        simulator: true",
        "        consensus:", "          daemon: beacond", "          chainSpec: devnet", "          genesis: 0g-home/config/genesis.json", ""].join("\n");
    return { sha256, entry, stop: () => server.kill() };
}

export function upgradeScenario(steps: Steps): void {
    const devYaml = () => fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
    steps.test("an upgrade at a height: the release staged and the watcher armed with nothing restarted; at the height validator-1 stops and signs the next height on the new release; the release it left refused on the host, a passed height at preview; back on the shipped config nothing restarts", {
        timeout: 25 * 60_000,
    }, async () => {
        const snapshot = lastUpConfig(devYaml());
        assert.ok(snapshot.includes(NODE_RELEASE) && snapshot.includes(VALIDATOR_KEY_LINE), "the dev config's validator-1 entry");
        const address = validator1Address();
        const chain = await servedPrevChainRelease(fs.mkdtempSync(path.join(ROOT, ".state", "upgrade-")));
        try {
            /** validator-1 on 0g-chain-prev, its network's RPC named, with `upgrade` when given. */
            const config = (upgrade?: string) => () =>
                snapshot
                    .replace(/^ {4}releases:\n/m, `    releases:\n${chain.entry}`)
                    .replace(NODE_RELEASE, "        release: 0g-chain-prev\n")
                    .replace(VALIDATOR_KEY_LINE, `${VALIDATOR_KEY_LINE}          consensusRpcUrl: http://127.0.0.1:8667\n${upgrade === undefined ? "" : `          upgrade: ${upgrade}\n`}`);
            const up = (label: string, edit: () => string) => timed(`pulumi up (${label})`, () => upWith(edit, [], 20 * 60_000));

            const onPrevStarted = Date.now();
            const onPrev = up("validator-1 on another archive of its release", config());
            const AHEAD = blocksAhead((Date.now() - onPrevStarted) / 1000);
            assert.equal(onPrev.status, 0, failureOf(onPrev.output));
            assert.match(unit("0gchaind-validator-1.service").argv, new RegExp(`/opt/nodefleet/releases/0g-chain-prev-${chain.sha256.slice(0, 24)}/bin/beacond`));

            // Scheduled AHEAD blocks on: staged, armed, nothing restarted.
            const before = { beacond: unit("0gchaind-validator-1.service"), geth: unit("geth-validator-1.service") };
            const h0 = vmnetHeight();
            const H = h0 + AHEAD;
            const staged = up(`upgrade to 0g-chain at height ${H}`, config(`{ release: 0g-chain, height: ${H} }`));
            assert.equal(staged.status, 0, failureOf(staged.output));
            assert.match(staged.output, new RegExp(`upgrade: validator-1 moves to 0g-chain at height ${H}; network beacond-2061 is at \\d+: \\d+ blocks left`));
            const atStaged = vmnetHeight();
            assert.ok(atStaged < H, `the up ended at height ${atStaged}, before the upgrade height ${H} (${AHEAD} blocks ahead: raise blocksAhead if the hosts are slower)`);
            assert.deepEqual({ beacond: unit("0gchaind-validator-1.service"), geth: unit("geth-validator-1.service") }, before, "nothing restarted when the upgrade is staged");
            assert.equal(onV("systemctl is-active nodefleet-upgrade-validator-1.service").output.trim(), "active");
            assert.equal(JSON.parse(onV(`cat ${RECORD}`).output).state, "pending");
            const status = JSON.parse(onV("python3 -S /usr/local/lib/nodefleet/zg-validator.py /etc/nodefleet/validator-1/validator.json status").output.trim().split("\n").pop()!);
            assert.equal(status.upgrade.state, "pending");
            assert.equal(status.upgrade.ready, true, JSON.stringify(status.upgrade));
            assert.ok(status.upgrade.blocksLeft > 0, JSON.stringify(status.upgrade));
            assert.ok(status.diagnoses.some((d: any) => d.fault === "upgrade-pending" && /blocks left; ready/.test(d.detail)), JSON.stringify(status.diagnoses));
            console.log(`# upgrade staged at network height ${atStaged}, ${H - atStaged} blocks before its height ${H}; status: ${JSON.stringify(status.upgrade)}`);

            // The height comes: the network halts while validator-1 swaps, and goes on with it.
            const deadline = Date.now() + (H - atStaged) * 5_000 * 2 + 180_000;
            while (vmnetHeight() < H + 2) {
                // The message only when it fails: the watcher's journal and the consensus state take SSH sessions.
                if (Date.now() >= deadline) assert.fail(`the network reaches height ${H + 2} (at ${vmnetHeight()}; the watcher: ${onV("journalctl -u nodefleet-upgrade-validator-1 -o cat | tail -5", true).output})\n${networkConsensus()}`);
                await new Promise((r) => setTimeout(r, 2000));
            }
            const rec = JSON.parse(onV(`cat ${RECORD}`).output);
            assert.deepEqual([rec.state, rec.stoppedAt, rec.from, rec.release], ["done", H, "0g-chain-prev", "0g-chain"], JSON.stringify(rec));
            for (const [name, bin] of [["0gchaind-validator-1.service", "beacond"], ["geth-validator-1.service", "geth"]]) {
                assert.match(unit(name!).argv, /\/opt\/nodefleet\/releases\/0g-chain-[0-9a-f]{24}\/bin\//, `${name} starts the shipped release`);
                assert.doesNotMatch(unit(name!).argv, /0g-chain-prev/, `${bin} left the release it ran`);
            }
            assert.ok(votedFor(vmnetRpc(`/commit?height=${H + 1}`).signed_header.commit, address), `validator-1 signed height ${H + 1} on the new release`);
            const around = networkBlocks(H - 3, address);
            const gap = blockTime(H + 1) - blockTime(H);
            console.log(`# upgrade at height ${H}: validator-1 stopped at ${rec.stoppedAt}, swapped in ${rec.seconds} s, signed ${H + 1}; the network's commit gap across it ${gap.toFixed(1)} s (a block every 5 s otherwise); heights ${H - 2}..${around.last} without validator-1's vote: ${around.unsigned.length} ${JSON.stringify(around.unsigned)}`);
            assert.ok(around.unsigned.length <= 1, `heights validator-1 missed across the upgrade: ${JSON.stringify(around.unsigned)}`);

            // The release it left, named again: refused on the host, nothing restarted.
            const swapped = unit("0gchaind-validator-1.service");
            const back = up("the release validator-1 left, named again", config());
            assert.notEqual(back.status, 0, "refused");
            assert.match(back.output, /this node moved from release 0g-chain-prev to 0g-chain at height \d+; the config names 0g-chain-prev again, which the chain left at that height: nodefleet does not start it on this state/);
            assert.deepEqual(unit("0gchaind-validator-1.service"), swapped, "not restarted");

            // A height the network has passed: refused at preview, with the figures.
            const passed = previewWith(config(`{ release: 0g-chain, height: ${H} }`));
            assert.notEqual(passed.status, 0);
            assert.match(passed.output, new RegExp(`nodes\\[\\d+\\]\\.validator\\.upgrade\\.height: ${H} is not ahead of network beacond-2061, already at height \\d+: an upgrade is scheduled ahead of the chain`));

            // The shipped config: validator-1 already runs it; nothing restarts, the watcher is gone.
            const shipped = up("the shipped config again", () => snapshot);
            assert.equal(shipped.status, 0, failureOf(shipped.output));
            assert.deepEqual(unit("0gchaind-validator-1.service"), swapped, "validator-1 runs the shipped release already: not restarted");
            assert.equal(onV("test -e /etc/systemd/system/nodefleet-upgrade-validator-1.service", true).status, 1, "the watcher's unit is gone");
        } finally {
            chain.stop();
        }
    });
}
