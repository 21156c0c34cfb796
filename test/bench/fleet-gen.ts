// Generated fleets for the scale benchmarks (test/bench/scale.ts under the mocks, engine.ts with
// the real engine): n nodes, the three roles in turn, each on an existing host of its own, each with
// a key of its own. Test keys only: none controls funds or a validator anywhere.
import * as crypto from "node:crypto";
import { existingHost, FAKE_SSH_KEY, RELEASES, sequencerNode, storageNode, validatorKeyJson, validatorNode } from "../support/fixtures";
import { addressOfPrivateKey } from "../../components/values/validators";

export interface GeneratedFleet {
    /** The `nodefleet:fleet` config object. */
    readonly fleet: { hosts: Record<string, unknown>; nodes: unknown[]; releases: unknown };
    /** The secrets it names, by config key. */
    readonly secrets: Record<string, string>;
}

/**
 * n nodes; host i is what `host(i)` gives (default: an existing host at 10.x.y.z with the fixtures'
 * SSH key secret and host key). `first`: the number of the first node (the shards of one fleet
 * number theirs apart: names and keys are the fleet's, each once).
 */
export function generate(n: number, host: (i: number) => Record<string, unknown> = (i) => existingHost(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`), first = 0): GeneratedFleet {
    const hosts: Record<string, unknown> = {};
    const nodes: unknown[] = [];
    const secrets: Record<string, string> = { sshKey: FAKE_SSH_KEY };
    const hex = (i: number, salt: string) => crypto.createHash("sha256").update(`${salt}${i}`).digest("hex");
    for (let i = first; i < first + n; i++) {
        const hostName = `h-${i}`;
        hosts[hostName] = host(i - first);
        const name = `node-${i}`;
        switch (i % 3) {
            case 0: {
                const s = storageNode();
                nodes.push({ ...s, name, host: hostName, storage: { ...s.storage, minerKeySecret: `key${i}` } });
                secrets[`key${i}`] = hex(i, "miner");
                break;
            }
            case 1: {
                const s = sequencerNode();
                secrets[`key${i}`] = `0x${hex(i, "sequencer")}`;
                nodes.push({ ...s, name, host: hostName, sequencer: { ...s.sequencer, validatorPrivateKeySecret: `key${i}`, validatorAddress: addressOfPrivateKey(secrets[`key${i}`]!) } });
                break;
            }
            default: {
                const v = validatorNode();
                nodes.push({ ...v, name, host: hostName, validator: { ...v.validator, validatorKeySecret: `key${i}` } });
                secrets[`key${i}`] = validatorKeyJson(hex(i, "validator").slice(0, 16));
            }
        }
    }
    return { fleet: { hosts, nodes, releases: RELEASES() }, secrets };
}
