// Validators that share a host and name the same CometBFT peer or seed: the peer, with CometBFT's
// default `p2p.allow_duplicate_ip = false`, keeps one connection per address, and the other node
// fails its handshake (docs/roles.md, "The consensus daemon"). A warning, not a refusal: the peer
// may allow duplicates, and a host may have addresses of its own per node behind it.
import type { FleetSpec } from "./schema";

export function checkSharedPeers(spec: FleetSpec, warnings: string[]): void {
    const seen = new Map<string, { readonly name: string; readonly at: string }>();
    spec.nodes.forEach((node, i) => {
        if (node.role !== "validator") return;
        for (const field of ["consensusPeers", "consensusSeeds"] as const) {
            node.validator[field].forEach((peer, k) => {
                const id = peer.split("@")[0]!.toLowerCase();
                const key = `${node.host}\n${id}`;
                const first = seen.get(key);
                if (first === undefined) seen.set(key, { name: node.name, at: `nodes[${i}].validator.${field}[${k}]` });
                else if (first.name !== node.name) {
                    warnings.push(`nodes[${i}].validator.${field}[${k}]: ${node.name} and ${first.name} (${first.at}) on host ${node.host} both reach the peer ${id}, which by CometBFT's default (p2p.allow_duplicate_ip = false) accepts one of them from one address: give each its own address, or the peer allow_duplicate_ip`);
                }
            });
        }
    });
}
