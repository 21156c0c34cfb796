// E2E tier: nodefleet's sequencer registration against real Aztec L1 contracts. The real
// CLI (4.1.2, lab/aztec.sh) deploys Aztec's L1 contracts onto the dev chain (real geth); the sender is
// funded and approves the rollup as an operator would; then the key step and the registration step
// nodefleet renders for a 4.1.2 sequencer run as a host runs them (sh, root-only env files,
// aztec-register.py, the release's bin/aztec being the real CLI). It registers once, the second run
// finds the deposit in the rollup's entry queue through the real contract's view functions and sends
// nothing, and after the queue is flushed the third finds the validator VALIDATING. Meanwhile no
// command line on the machine holds the sender key or the BLS key.
//
// Where this runs: on this machine, with the release's CLI (lab/aztec.sh) behind the release link
// as a host has it, against a rollup of its own: each run starts from a validator the rollup has
// never seen, whatever the dev stack's sequencer did with its own. The dev stack runs the same steps
// on its host under systemd against the dev rollup (test/scenarios/hosts.ts, sequencer.ts), and the
// real node itself there. It runs beside the dev stack's scenarios (scripts/lib/e2e-lane.sh starts
// the dev chain for both); the dev chain's funded account pays for its deployment and flush, and for
// the dev stack's queue flush: one sender at a time (aztecLab's lock).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import { parseFleet } from "../../components/config/fleet";
import { renderSequencerKey, renderSequencerRegistration } from "../../components/roles/sequencer/node";
import { sequencerPaths } from "../../components/roles/sequencer/contract";
import { releaseLink } from "../../components/hosts/scripts";
import { baseFleet, SECRETS, secretSource, sequencerV4Settings, l1Urls } from "../support/fixtures";
import { ROOT, sh } from "../support/cli";
import { aztecInstall, aztecLab as aztec, devKey, prepareAztecHost } from "../support/aztec";
import { roleTools } from "../../components/hosts/tools";

const L1 = "http://127.0.0.1:8545";
const CHAIN_ID = 80087; // the dev chain's (lab/devchain.sh: beacond's devnet chain spec)
const DEVCHAIN = path.join(ROOT, "lab/devchain.sh");
const NODE = "aztec-reg-e2e";
const RELEASE = "aztec-reg-e2e";

/** Runs a script with sh as the remote step would, watching every process's command line every 50 ms for the secrets. */
function runWatched(script: string, secrets: string[]): Promise<{ code: number | null; stdout: string; stderr: string; exposed: string[] }> {
    return new Promise((resolve) => {
        const child = spawn("sh", ["-s"], { stdio: ["pipe", "pipe", "pipe"] });
        let stdout = "", stderr = "";
        const exposed = new Set<string>();
        child.stdout.on("data", (d) => (stdout += d));
        child.stderr.on("data", (d) => (stderr += d));
        const watch = setInterval(() => {
            for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
                let cmdline = "";
                try {
                    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "latin1");
                } catch {
                    continue;
                }
                for (const s of secrets) if (cmdline.toLowerCase().includes(s.toLowerCase())) exposed.add(`${pid}: ${cmdline.replace(/\0/g, " ").slice(0, 120)}`);
            }
        }, 50);
        child.on("close", (code) => {
            clearInterval(watch);
            resolve({ code, stdout, stderr, exposed: [...exposed] });
        });
        child.stdin.end(script);
    });
}

const lastJson = (out: string) => JSON.parse(out.trim().split("\n").pop()!);

describe("registration on real Aztec L1 contracts (4.1.2, the dev chain)", { timeout: 30 * 60_000 }, () => {
    const created: string[] = [];
    let chainWasRunning = false;
    let contracts: Record<string, string>;
    const senderKey = `0x${randomBytes(32).toString("hex")}`;
    const blsKey = `0x0${randomBytes(31).toString("hex")}`; // below the BN254 order
    let sender: string;

    before(() => {
        // Beside the dev stack's main job: below it (this file's process and what it runs).
        os.setPriority(10);
        prepareAztecHost(NODE, RELEASE, roleTools("sequencer").map((t) => t.path), created); // what the sequencer's steps install
        aztecInstall();
        // `devchain.sh status` exits 0 either way: it says "geth running" or "geth stopped".
        chainWasRunning = /^geth running$/m.test(sh("bash", [DEVCHAIN, "status"]).stdout);
        sh("bash", [DEVCHAIN, "start"]);
        // The release's bin/aztec is the real CLI, as the lab runs it (node dest/bin/index.js).
        aztec(["release", releaseLink(RELEASE)]);
    });

    after(() => {
        for (const p of created.reverse()) fs.rmSync(p, { recursive: true, force: true });
        if (!chainWasRunning) sh("bash", [DEVCHAIN, "stop"], { allowFail: true });
    });

    it("deploy-l1-contracts (the real CLI, forge) puts Aztec's L1 contracts on the dev chain", { timeout: 10 * 60_000 }, () => {
        const t0 = Date.now();
        contracts = JSON.parse(aztec(["deploy", L1, String(CHAIN_ID)], { DEPLOYER_KEY: devKey() }));
        process.stderr.write(`[aztec] deploy-l1-contracts: ${((Date.now() - t0) / 1000).toFixed(1)} s, rollup ${contracts.rollupAddress}\n`);
        for (const k of ["rollupAddress", "registryAddress", "stakingAssetAddress", "gseAddress"]) assert.match(contracts[k]!, /^0x[0-9a-f]{40}$/, k);
        // The sender: ETH for gas, the activation threshold of the staking asset, the rollup approved.
        sender = aztec(["l1", "address", L1, contracts.rollupAddress!], { SENDER_KEY: senderKey }).trim();
        aztec(["l1", "fund", L1, contracts.rollupAddress!], { DEPLOYER_KEY: devKey(), SENDER_KEY: senderKey });
    });

    it("nodefleet registers once, finds the deposit queued on the second run and VALIDATING after the flush, keys in no command line", { timeout: 10 * 60_000 }, async () => {
        assert.ok(contracts, "the contracts were deployed");
        const f = baseFleet();
        f.nodes[1].name = NODE;
        f.nodes[1].release = RELEASE;
        f.releases[RELEASE] = f.releases.aztec;
        f.nodes[1].sequencer = {
            ...sequencerV4Settings(), network: "local", l1ChainId: CHAIN_ID, l1RpcUrls: [L1], registryAddress: contracts.registryAddress,
            rollupAddress: contracts.rollupAddress, validatorAddress: sender, withdrawerAddress: sender, runtime: "release",
        };
        // The config's keys are the run's own (validatorAddress is the sender key's address: checked).
        const node = parseFleet(f, secretSource({ ...SECRETS, sequencerKey: senderKey, blsKey })).spec.nodes[1] as any;
        const mount = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-aztec-reg-"));
        created.push(mount);
        fs.mkdirSync(sequencerPaths(node, mount).dataDir, { recursive: true });

        // The watch sees a key on a command line when there is one.
        const shown = await runWatched(`python3 -c 'import time; time.sleep(0.5)' ${blsKey}\n`, [blsKey.slice(2)]);
        assert.ok(shown.exposed.length >= 1, "the command-line watch works");
        const key = await runWatched(renderSequencerKey(node, mount, senderKey, blsKey, l1Urls(node)), [senderKey.slice(2), blsKey.slice(2)]);
        assert.equal(key.code, 0, key.stderr);
        const registration = renderSequencerRegistration(node, mount, RELEASE);
        const secrets = [senderKey.slice(2), blsKey.slice(2)];

        const first = await runWatched(registration, secrets);
        assert.equal(first.code, 0, first.stdout + first.stderr);
        const submitted = lastJson(first.stdout);
        assert.equal(submitted.action, "submitted", first.stdout);
        assert.match(submitted.transaction, /^0x[0-9a-f]{64}$/);
        assert.deepEqual(first.exposed, [], "a key showed in a command line");
        for (const s of secrets) assert.ok(!(first.stdout + first.stderr).includes(s), "a key in the output");

        const second = await runWatched(registration, secrets);
        assert.equal(second.code, 0, second.stderr);
        const queued = lastJson(second.stdout);
        assert.deepEqual([queued.status, queued.action], ["QUEUED", "none: queued"], second.stdout);
        assert.ok(!/Transaction hash/.test(second.stdout), "the second run sent nothing");

        aztec(["l1", "flush", L1, contracts.rollupAddress!], { DEPLOYER_KEY: devKey() });
        const third = await runWatched(registration, secrets);
        assert.equal(third.code, 0, third.stderr);
        const registered = lastJson(third.stdout);
        assert.deepEqual([registered.status, registered.action], ["VALIDATING", "none: already registered"], third.stdout);
        // The contract says so too, read independently through viem.
        assert.deepEqual(JSON.parse(aztec(["l1", "status", L1, contracts.rollupAddress!, sender])), { status: 1, queued: null });
    });
});
