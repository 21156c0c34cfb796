// Reading CometBFT's commits as the lab's real beacond writes them.

/** One entry of a commit's `signatures`, as `/commit` answers it. */
export interface CommitSig {
    block_id_flag: number;
    validator_address: string;
    signature: string | null;
}

/**
 * The flags that mean "voted for the commit's block" in the CometBFT of BeaconKit v1.1.0
 * (berachain/cometbft, types/block.go): 2 a signature of its own, 4 the aggregated signature of
 * every such vote, 5 a vote whose signature is aggregated in another entry. 1 is absent; 3, 6 and
 * 7 are votes for nil.
 */
const FOR_THE_BLOCK = new Set([2, 4, 5]);

/**
 * Whether `address`'s precommit for the block is in the commit. With BLS12-381 keys the fork
 * aggregates a commit's precommits into the first voter's entry: every other voter's entry has a
 * null signature, so a missing signature is not a missing vote; the flag says which.
 */
export function votedFor(commit: { signatures: CommitSig[] }, address: string): boolean {
    return FOR_THE_BLOCK.has(voteFlag(commit, address) ?? 0);
}

/** `address`'s `block_id_flag` in the commit; undefined when the commit has no entry for it. */
export function voteFlag(commit: { signatures: CommitSig[] }, address: string): number | undefined {
    return commit.signatures.find((sig) => sig.validator_address === address)?.block_id_flag;
}
