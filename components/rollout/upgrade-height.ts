// Upgrades at a height against the network (docs/rollouts.md, "Upgrades at a height"): at preview
// and up, a validator's upgrade height must be ahead of its network's last committed height, read
// at its `consensusRpcUrl`. A height the chain has reached is refused with the figures: the upgrade
// happened (name its release in the node's release) or was agreed too late. Without the URL the
// host alone checks the node's own height (zgvalidator/upgrade.py).
import type { FleetPlan } from "../config/fleet";
import { contractOf } from "../roles/registry";
import { consensusRpc, httpGet, parseNetworkStatus, rpcText, RpcAnswerError, type Get } from "./power";

/** Each scheduled upgrade's figures (logged), or the refusals, each naming the field and the numbers. */
export async function checkUpgradeHeights(
    plan: FleetPlan,
    get: Get = httpGet,
): Promise<{ readonly lines: string[]; readonly refused: string[] }> {
    const lines: string[] = [];
    const refused: string[] = [];
    const reads = new Map<string, Promise<{ network: string; height: number }>>();
    for (const [i, node] of plan.spec.nodes.entries()) {
        const contract = contractOf(node);
        const up = contract.upgrade?.(node);
        if (up === undefined) continue;
        const at = `nodes[${i}].${up.field}.height`;
        const rpc = contract.network?.(node);
        if (rpc === undefined) {
            lines.push(
                `upgrade: ${node.name} moves to ${up.release} at height ${up.height}; the network's height is not known here (no consensusRpcUrl): the host refuses a height its node has passed`,
            );
            continue;
        }
        const { where, url } = consensusRpc(plan, `nodes[${i}].${rpc.field}`, rpc.url);
        if (url === undefined) {
            refused.push(`${where}: the secret is not set`);
            continue;
        }
        if (!reads.has(url)) reads.set(url, rpcText(url, "/status", "/status", get).then(parseNetworkStatus));
        let network: { network: string; height: number };
        try {
            network = await reads.get(url)!;
        } catch (e) {
            refused.push(
                `${where}: the network's height cannot be read, so ${at} cannot be checked against it: ${e instanceof RpcAnswerError ? e.message : "request failed"}`,
            );
            continue;
        }
        if (up.height <= network.height) {
            refused.push(
                `${at}: ${up.height} is not ahead of network ${network.network}, already at height ${network.height}: an upgrade is scheduled ahead of the chain. If ${node.name} already moved to ${up.release} at ${up.height}, name ${up.release} in its release and remove upgrade`,
            );
        } else {
            lines.push(
                `upgrade: ${node.name} moves to ${up.release} at height ${up.height}; network ${network.network} is at ${network.height}: ${up.height - network.height} blocks left`,
            );
        }
    }
    return { lines, refused };
}
