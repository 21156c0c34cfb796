// The e2e tier's reading of a validator's vote in a CometBFT commit (test/support/cometbft.ts), on a
// commit the lab network's real beacond wrote: both validators voted, the first entry carries the
// aggregated BLS signature and the second none.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { voteFlag, votedFor, type CommitSig } from "../support/cometbft";

const commit = JSON.parse(fs.readFileSync(path.resolve(__dirname, "../../../test/fixtures/cometbft/beacond-1.1.0-commit.json"), "utf8")).result.signed_header.commit as { signatures: CommitSig[] };
const RUNNER = "D394AE99FC2225EF36C36D2B756126914F0D81D3";
const VALIDATOR_1 = "BD01F5D80C532B2EE0128F3C39FDB14B4E866BA5";

describe("a validator's vote in a commit of the real beacond", () => {
    it("counts a vote whose signature is aggregated into another entry", () => {
        assert.deepEqual(commit.signatures.map((s) => [s.validator_address, s.block_id_flag, s.signature === null]), [[RUNNER, 4, false], [VALIDATOR_1, 5, true]]);
        assert.equal(votedFor(commit, RUNNER), true);
        assert.equal(votedFor(commit, VALIDATOR_1), true);
    });

    it("does not count an absent validator, a vote for nil, or an address not in the commit", () => {
        const flagged = (flag: number) => ({ signatures: commit.signatures.map((s) => (s.validator_address === VALIDATOR_1 ? { ...s, block_id_flag: flag } : s)) });
        for (const flag of [1, 3, 6, 7]) assert.equal(votedFor(flagged(flag), VALIDATOR_1), false, `flag ${flag}`);
        assert.equal(votedFor(flagged(2), VALIDATOR_1), true, "a signature of its own");
        assert.equal(votedFor(commit, "00".repeat(20)), false);
        assert.equal(voteFlag(commit, "00".repeat(20)), undefined);
        assert.equal(voteFlag(commit, VALIDATOR_1), 5);
    });
});
