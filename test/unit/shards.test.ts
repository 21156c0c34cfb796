// Shards (components/fleet/shards.ts): the public identity of each signing key, the other shards' config
// files and last outputs checked against this stack's. Under the strict mocks a stack reference
// answers what the test sets; the cli tier (test/cli/shards.test.ts) runs two real shards on one
// backend.
import { afterEach, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { stringify } from "yaml";
import { shardConfigConflicts, shardOutputConflicts, siblingShards, signingKeys } from "../../components/fleet/shards";
import { fleetSpec, type FleetSpec } from "../../components/config/schema";
import { baseFleet, SECRETS, SEQUENCER_KEY_ADDRESS, validatorKeyJson } from "../support/fixtures";
import { installMocks, previousStackOutputs } from "../support/mocks";

function spec(shards?: string[], edit: (f: any) => void = () => undefined): FleetSpec {
    const f: any = baseFleet();
    if (shards) f.shards = shards;
    edit(f);
    return fleetSpec.parse(f);
}

/** A project directory holding the other shards' stack files. */
function project(files: Record<string, unknown>): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-shards-"));
    for (const [stack, fleet] of Object.entries(files)) fs.writeFileSync(path.join(dir, `Pulumi.${stack}.yaml`), stringify({ config: { "nodefleet:fleet": fleet } }));
    return dir;
}

/** Shard b of [a, b]: other nodes, other keys, other hosts. */
function otherShard(edit: (f: any) => void = () => undefined): unknown {
    const f: any = baseFleet();
    f.shards = ["a", "b"];
    for (const n of f.nodes) {
        n.name = `${n.name}-b`;
        if (n.validator) n.validator.validatorKeySecret = "validatorKeyB";
        if (n.sequencer) {
            n.sequencer.validatorPrivateKeySecret = "sequencerKeyB";
            n.sequencer.validatorAddress = "0x" + "ab".repeat(20);
        }
    }
    for (const h of Object.values(f.hosts) as any[]) h.address = h.address.replace(/^192\.0\.2\./, "198.51.100.");
    edit(f);
    return f;
}

describe("shards", () => {
    it("a stack names itself among the shards; without shards it has no siblings", () => {
        assert.deepEqual(siblingShards(spec(), "a"), []);
        assert.deepEqual(siblingShards(spec(["a", "b", "c"]), "b"), ["a", "c"]);
        assert.throws(() => siblingShards(spec(["a", "b"]), "c"), /shards: lists a, b, not this stack \(c\)/);
        assert.equal(fleetSpec.safeParse({ ...baseFleet(), shards: ["a"] }).success, false, "one shard is no split");
        assert.equal(fleetSpec.safeParse({ ...baseFleet(), shards: ["a", "a"] }).success, false);
        assert.equal(fleetSpec.safeParse({ ...baseFleet(), shards: ["a", "B_2"] }).success, false);
    });

    it("a signing key's identity is derived from the key itself (the 0G consensus address, the Aztec attester address), never the key", () => {
        const keys = signingKeys(spec(), (k) => SECRETS[k]);
        const json = JSON.parse(SECRETS.validatorKey!) as { address: string };
        assert.deepEqual(keys, { "sequencer-1": `aztec-attester:${SEQUENCER_KEY_ADDRESS.toLowerCase()}`, "validator-1": `0g-consensus:${json.address}` });
        const text = JSON.stringify(keys);
        for (const secret of [SECRETS.sequencerKey!, JSON.parse(SECRETS.validatorKey!).priv_key.value]) assert.ok(!text.includes(secret.replace(/^0x/, "")));
        // Another key, another identity; an unreadable key, none (the fleet's own checks name it).
        assert.notEqual(signingKeys(spec(), (k) => (k === "validatorKey" ? validatorKeyJson("other") : SECRETS[k]))["validator-1"], keys["validator-1"]);
        assert.equal(signingKeys(spec(), (k) => (k === "validatorKey" ? "{not json" : SECRETS[k]))["validator-1"], undefined);
    });

    it("a BLS12-381 validator key (BeaconKit's, beacond init's) has its consensus address too: the guard against one key in two shards covers it", () => {
        // The dev validator's key (lab keys, committed): it had no identity here, and a second shard
        // naming it was not refused (the cli pipeline test found it).
        const bls = fs.readFileSync(path.join(__dirname, "../../../lab/sim/release/vmnet/priv_validator_key.json"), "utf8");
        const address = (JSON.parse(bls) as { address: string }).address;
        assert.equal(signingKeys(spec(), (k) => (k === "validatorKey" ? bls : SECRETS[k]))["validator-1"], `0g-consensus:${address}`);
        const changed = JSON.parse(bls);
        changed.address = "00".repeat(20);
        assert.equal(signingKeys(spec(), (k) => (k === "validatorKey" ? JSON.stringify(changed) : SECRETS[k]))["validator-1"], undefined, "a file whose address is not its key's");
    });

    it("the other shards' config files: a node, key secret, sequencer address or host they hold is refused, each named", () => {
        const clean = project({ b: otherShard() });
        assert.deepEqual(shardConfigConflicts(spec(["a", "b"]), "a", clean), []);
        const dir = project({
            b: otherShard((f) => {
                f.nodes[2].name = "validator-1";
                f.nodes[1].sequencer.validatorPrivateKeySecret = "sequencerKey";
                f.nodes[1].sequencer.validatorAddress = SEQUENCER_KEY_ADDRESS.toLowerCase();
                f.hosts["h-storage"].address = "192.0.2.10";
            }),
        });
        const problems = shardConfigConflicts(spec(["a", "b"]), "a", dir);
        const validator = spec().nodes.findIndex((n) => n.name === "validator-1");
        const sequencer = spec().nodes.findIndex((n) => n.name === "sequencer-1");
        assert.deepEqual(problems, [
            `nodes[${sequencer}].sequencer.validatorPrivateKeySecret: shard b's sequencer-1-b signs with the key of the same config key: one key must never sign on two machines`,
            `nodes[${sequencer}].sequencer.validatorAddress: shard b's sequencer-1-b has the same address: one key must never sign on two machines`,
            `nodes[${validator}].name: validator-1 is also a node of shard b: a validator belongs to one shard; to move it, remove it there and run that shard's up first`,
            `hosts.h-storage: 192.0.2.10:22 is also shard b's host h-storage: a host belongs to one shard`,
        ]);
        // The same stacks named in each shard; a shard whose file is missing is named.
        assert.match(shardConfigConflicts(spec(["a", "b", "c"]), "a", clean).join("\n"), /shards: shard b lists a, b, this stack a, b, c: every shard names the same stacks/);
        assert.match(shardConfigConflicts(spec(["a", "b", "c"]), "a", clean).join("\n"), /shards: shard c: cannot read its fleet from Pulumi\.c\.yaml \(ENOENT\)/);
    });

    describe("the other shards' last outputs", () => {
        afterEach(() => delete previousStackOutputs.signingKeys);

        it("refuses a key another shard's last up left running, naming the node there and what to do", async () => {
            installMocks();
            const mine = { "validator-1": "0g-consensus:ABC", "sequencer-1": "aztec-attester:0xdef" };
            assert.deepEqual(await shardOutputConflicts(["b"], mine), [], "a shard with no outputs yet runs nothing");
            previousStackOutputs.signingKeys = { "validator-9": "0g-consensus:ABC", "sequencer-9": "aztec-attester:0x123" };
            assert.deepEqual(await shardOutputConflicts(["b"], mine), [
                "validator-1: its key (0g-consensus:ABC) signs in shard b as validator-9, as that shard's last up left it: one key must never sign on two machines. Remove validator-9 from Pulumi.b.yaml and run that shard's up (it stops the node there), then run this one's",
            ]);
            previousStackOutputs.signingKeys = ["not", "a", "map"];
            await assert.rejects(shardOutputConflicts(["b"], mine), /shard b: its stack output signingKeys is not a map of node to key/);
        });
    });
});
