// The dev stack's validator on the real beacond and geth: one JWT file, its key the operator's
// alone, and a validator of its network (it commits, signs and proposes).
import * as assert from "node:assert/strict";
import type { Steps } from "../support/steps";
import { voteFlag, votedFor } from "../support/cometbft";
import { networkConsensus, onV, stackHealth, stackHealthOnHost, unitState, until, validator1Address, vmnetHeight } from "../support/lab";

/** What the validator scenario saw, for the switch after it. */
export interface ValidatorChain {
    /** The height validator-1 was seen to commit (the chain the switch exports has it). */
    followedHead: number;
}

export function validatorScenario(steps: Steps, chain: ValidatorChain): void {
    steps.test("validator-1 runs geth and the real beacond with one JWT file, its key readable by the operator only", {}, () => {
        const h = stackHealth()["validator-1"];
        assert.equal(h.client, "geth");
        assert.equal(h.jwtSameFile, "/data/validator-1/jwt.hex");
        assert.equal(h.consensusProcessesWithThisKey, 1);
        for (const unit of ["geth-validator-1", "0gchaind-validator-1"]) assert.equal(unitState(unit), "active", unit);
        const ps = onV("ps -eo args").output;
        assert.match(ps, /geth --datadir \/data\/validator-1\/geth .*--authrpc\.jwtsecret \/data\/validator-1\/jwt\.hex/);
        assert.match(ps, /bin\/beacond start --home \/data\/validator-1\/0gchaind --beacon-kit\.engine\.jwt-secret-path \/data\/validator-1\/jwt\.hex/);
        // The release's consensus genesis, installed by setup.
        assert.equal(onV("cmp /opt/nodefleet/0g-chain/0g-home/config/genesis.json /data/validator-1/0gchaind/config/genesis.json && echo same").output.trim(), "same");
        assert.equal(onV("stat -c '%a %U' /data/validator-1/0gchaind/config/priv_validator_key.json /data/validator-1/jwt.hex").output.trim(), "600 nodefleet\n600 nodefleet");
        // Committing on geth.
        assert.match(onV("journalctl -u 0gchaind-validator-1 -o cat | tail -200").output, /Committed state.*?\bheight=\d+/);
    });

    steps.test("validator-1 is a validator of its network on the real beacond: it commits on geth, signs every one of the network's commits (its vote needed for each) and proposes its share; the network's other validator (its peer at 10.0.2.2:26756) holds the same chain, hash for hash", { timeout: 20 * 60_000 }, async () => {
        // The network is lab/sim/release/vmnet: validator-1 (devValidatorKey, 40% of the power)
        // and lab/devchain.sh's validator on the runner (60%, a block every 5 s). Neither holds
        // two thirds, so no height commits without validator-1's precommit.
        const address = validator1Address();
        assert.equal(unitState("0gchaind-validator-1"), "active", "0gchaind runs (or there is nothing to wait for)");
        // The lab's part, as an operator fits a validator to their network's consensus timings:
        // vmnet's validator on the runner proposes 5 s after each commit (timeout_commit). With
        // BeaconKit's defaults on validator-1 (0.5 s, then a 2 s timeout_propose) its propose step
        // runs out before the proposal comes and it prevotes nil, which costs the network a round
        // at every height the runner proposes. So validator-1 enters each height 2 s before the
        // proposal is due and waits up to 2 s past it.
        const CONFIG = "/data/validator-1/0gchaind/config/config.toml";
        const TIMINGS = "# nodefleet e2e: the consensus timings of validator-1 (test/scenarios/validator.ts)";
        onV(`grep -qxF '${TIMINGS}' ${CONFIG} || { printf '\\n%s\\n[consensus]\\ntimeout_commit = "3s"\\ntimeout_propose = "4s"\\n' '${TIMINGS}' >> ${CONFIG} && systemctl restart 0gchaind-validator-1; }`);
        // Caught up again: the network's other validator (on the runner) is at its height.
        const networkHeight = () => {
            try {
                return vmnetHeight(5);
            } catch {
                return -1; // no answer: validator-1's own height stands
            }
        };
        await until("validator-1 to follow its network again", () => stackHealthOnHost().consensusHeight >= networkHeight() && unitState("0gchaind-validator-1") === "active", 5 * 60_000);
        const start = stackHealthOnHost().consensusHeight;
        const target = start + 10;
        const started = Date.now();
        await until(`validator-1 to commit 10 blocks past height ${start}`, () => {
            const h = stackHealthOnHost();
            return h.executionHeight >= target && h.consensusHeight >= target;
        }, 10 * 60_000, networkConsensus);
        console.log(`# validator-1 committed heights ${start}..${target} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
        chain.followedHead = target;
        const hashOn = (url: string) => JSON.parse(onV(`curl -fsS -m 5 -X POST -H 'Content-Type: application/json' --data '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x${target.toString(16)}",false]}' ${url}`).output).result?.hash;
        await until(`the network's other validator to hold block ${target}`, () => Boolean(hashOn("http://10.0.2.2:8555")), 120_000);
        assert.equal(hashOn("http://127.0.0.1:56545"), hashOn("http://10.0.2.2:8555"));
        // CometBFT's own record (validator-1's RPC): its key signed the commits, and proposed blocks.
        const comet = (q: string) => JSON.parse(onV(`curl -fsS -m 5 'http://127.0.0.1:56657/${q}'`).output).result;
        const status = comet("status");
        assert.equal(status.validator_info.address, address);
        assert.ok(Number(status.validator_info.voting_power) > 0, "validator-1 has voting power");
        const heights = Array.from({ length: target - start }, (_, i) => start + 1 + i);
        const commits = heights.map((n) => comet(`commit?height=${n}`).signed_header.commit);
        const signed = heights.filter((_, i) => votedFor(commits[i], address));
        // The round each height committed in: above 0 where a round ran out (a proposal late or missed).
        const rounds = commits.map((c: any) => Number(c.round));
        // Its proposals: 40% of the power makes it the first proposer at about two heights in five, so
        // the window is every height it has followed, up to 60 back, read in one SSH session.
        const from = Math.max(1, target - 60);
        // (A height its node no longer holds prints nothing and is left out; the ten watched are there.)
        const blocks = onV(`for n in $(seq ${from} ${target}); do curl -fsS -m 5 "http://127.0.0.1:56657/block?height=$n" | tr -d '\\n'; echo; done`).output.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l).result.block.header);
        assert.ok(blocks.length >= target - start, `validator-1's node answered for ${blocks.length} of heights ${from}..${target}`);
        const proposed = blocks.filter((h: any) => h.proposer_address === address).map((h: any) => Number(h.height));
        const flags = commits.map((c: any) => voteFlag(c, address) ?? "-");
        console.log(`# validator-1 signed ${signed.length} of heights ${start + 1}..${target} (its block_id_flag ${flags.join(",")}; committed in rounds ${rounds.join(",")}), and proposed ${proposed.length} of heights ${from}..${target} (${proposed.join(",")})`);
        // Every commit of the network carries validator-1's precommit: without it the other
        // validator's 60% is short of two thirds. A missing one would be a height committed
        // without it, which CometBFT cannot do, or a commit read from a node that lost it.
        assert.deepEqual(heights.filter((n) => !signed.includes(n)), [], `validator-1 signed ${signed.length} of the commits of heights ${start + 1}..${target}`);
        assert.ok(proposed.length > 0, `validator-1 proposed none of heights ${from}..${target}`);
        assert.match(onV("journalctl -u 0gchaind-validator-1 -o cat | tail -200").output, /Committed state.*?\bheight=\d+/);
        assert.equal(status.sync_info.catching_up, false);
    });
}
