// The rules of upgrades at a height (`validator.upgrade`, docs/rollouts.md) the config alone can
// check: the release is another one, with the same consensus daemon, and the validators of one
// network (one `consensusRpcUrl`) agree on a single upgrade. The height against the network's own
// is checked at preview (rollout/upgrade-height.ts) and on the host (zgvalidator/upgrade.py).
import type { FleetSpec } from "./schema";

export function checkUpgrades(spec: FleetSpec, issues: string[]): void {
    const byNetwork = new Map<string, { at: string; what: string }>();
    spec.nodes.forEach((node, i) => {
        if (node.role !== "validator" || node.validator.upgrade === undefined) return;
        const up = node.validator.upgrade;
        const at = `nodes[${i}].validator.upgrade`;
        if (up.release === node.release) issues.push(`${at}.release: ${node.name} already runs ${up.release}: an upgrade moves it to another release`);
        const daemon = (name: string | undefined) => (name === undefined ? undefined : (spec.releases[name]?.consensus?.daemon ?? "0gchaind"));
        const from = daemon(node.release);
        const to = daemon(up.release);
        if (Object.hasOwn(spec.releases, up.release) && from !== undefined && to !== from) {
            issues.push(`${at}.release: ${up.release} carries ${to} and ${node.name} runs ${from}: an upgrade at a height keeps the consensus daemon (its home, key and flags)`);
        }
        const rpc = node.validator.consensusRpcUrl;
        if (rpc === undefined) return;
        const network = typeof rpc === "string" ? rpc : `secret ${rpc.secret}`;
        const what = `${up.release} at height ${up.height}`;
        const seen = byNetwork.get(network);
        if (seen === undefined) byNetwork.set(network, { at, what });
        else if (seen.what !== what) issues.push(`${at}: ${what}, while ${seen.at} of the same network (its consensusRpcUrl) asks ${seen.what}: one upgrade at a time per network`);
    });
}
