// An upgrade at an agreed height (`validator.upgrade`, docs/rollouts.md): the config's refusals,
// the release installed by the host ahead, what the configure step stages (the new release's units,
// the watcher's unit, checked by systemd-analyze verify and shellcheck, kept as golden copies), the
// configure step waiting for that install, and the check of the height against the network's at
// preview (a local CometBFT-shaped HTTP answer). What the watcher does on a host is the host tool's
// (hostfiles/tests/test_zg_validator_upgrade.py) and the lab's upgrade drill (test/scenarios/upgrade.ts).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseFleet } from "../../components/config/fleet";
import { HOSTFILES_DIR } from "../../components/base/render";
import { renderValidatorConfigure, validatorSettingsJson } from "../../components/roles/validator/node";
import { validatorRelease } from "../../components/roles/validator/units";
import { renderUpgradeWatcher, upgradeWatcherUnit } from "../../components/roles/validator/upgrade";
import { checkUpgradeHeights } from "../../components/rollout/upgrade-height";
import type { Get } from "../../components/rollout/power";
import { golden, requireTool, runTool, verifyUnits } from "../support/golden";
import { baseFleet, chainRelease, SECRETS, secretSource } from "../support/fixtures";
import { buildStack } from "../support/stack";
import { scriptOf } from "../support/mocks";

const V = 2;
const NEXT = { url: "https://github.com/0glabs/0g-chain/releases/download/v1.0.7/aristotle-v1.0.7.tar.gz", sha256: "07".repeat(32) };
const UPGRADE = { release: validatorRelease({ name: "0g-chain-next", sha256: NEXT.sha256 }), height: 1200 };

/** The base fleet with the validator's upgrade (and the release it names) as `edit` leaves them. */
function fleetWith(edit: (f: any) => void = () => {}) {
    const f = baseFleet();
    f.releases["0g-chain-next"] = { ...NEXT };
    f.nodes[V].validator.upgrade = { release: "0g-chain-next", height: 1200 };
    edit(f);
    return f;
}

function refused(f: unknown): string {
    try {
        parseFleet(f, secretSource());
    } catch (e) {
        return (e as Error).message;
    }
    assert.fail("the config was accepted");
}

describe("an upgrade at a height: the config", () => {
    it("is accepted, and the validator's host installs the upgrade's release beside the running one", () => {
        const plan = parseFleet(fleetWith(), secretSource());
        const host = plan.hosts.find((h) => h.nodes.some((n) => n.name === "validator-1"))!;
        assert.deepEqual(host.releases.map((r) => r.name), ["0g-chain", "0g-chain-next"]);
        assert.deepEqual(plan.warnings.filter((w) => w.includes("0g-chain-next")), [], "the release is used");
    });

    it("refuses a release that is not under releases, naming the field and the known ones", () => {
        const msg = refused(fleetWith((f) => (f.nodes[V].validator.upgrade.release = "0g-chain-later")));
        assert.match(msg, /nodes\[2\]\.validator\.upgrade\.release: no release named "0g-chain-later" under releases \(known: zgs, aztec, 0g-chain, 0g-chain-next\)/);
    });

    it("refuses the release the node already runs", () => {
        const msg = refused(fleetWith((f) => (f.nodes[V].validator.upgrade.release = "0g-chain")));
        assert.match(msg, /nodes\[2\]\.validator\.upgrade\.release: validator-1 already runs 0g-chain: an upgrade moves it to another release/);
    });

    it("refuses a release with another consensus daemon", () => {
        const msg = refused(fleetWith((f) => (f.releases["0g-chain-next"].consensus = { daemon: "beacond" })));
        assert.match(msg, /upgrade\.release: 0g-chain-next carries beacond and validator-1 runs 0gchaind/);
    });

    it("refuses a height that is not a whole number from 1, and an upgrade beside a switch that changes the units", () => {
        assert.match(refused(fleetWith((f) => (f.nodes[V].validator.upgrade.height = 0))), /nodes\[2\]\.validator\.upgrade\.height/);
        assert.match(refused(fleetWith((f) => (f.nodes[V].validator.upgrade.height = 10.5))), /nodes\[2\]\.validator\.upgrade\.height/);
        const sw = refused(fleetWith((f) => Object.assign(f.nodes[V].validator, { executionClient: "reth", switch: "migrate" })));
        assert.match(sw, /upgrade: an upgrade at a height and switch: migrate change the node's units both: finish the switch first/);
    });

    it("refuses two upgrades at once in one network (validators that name one consensusRpcUrl)", () => {
        const msg = refused(fleetWith((f) => {
            const other = structuredClone(f.nodes[V]);
            Object.assign(other, { name: "validator-2", host: "h-storage" });
            Object.assign(other.validator, { portPrefix: 57, upgrade: { release: "0g-chain-next", height: 1300 } });
            f.nodes[V].validator.consensusRpcUrl = other.validator.consensusRpcUrl = "http://198.51.100.9:26657";
            f.nodes.push(other);
        }));
        assert.match(msg, /nodes\[3\]\.validator\.upgrade: 0g-chain-next at height 1300, while nodes\[2\]\.validator\.upgrade of the same network \(its consensusRpcUrl\) asks 0g-chain-next at height 1200: one upgrade at a time per network/);
    });
});

describe("an upgrade at a height: what the configure step stages", () => {
    const node = () => parseFleet(fleetWith(), secretSource()).spec.nodes[V] as any;

    it("the watcher's unit passes systemd-analyze verify and runs the host tool's upgrade-watch", () => {
        const unit = fs.readFileSync(golden("validator/nodefleet-upgrade-validator-1.service", renderUpgradeWatcher(node(), UPGRADE)), "utf8");
        verifyUnits({ [upgradeWatcherUnit("validator-1")]: unit });
        assert.match(unit, /^ExecStart=\/usr\/bin\/python3 -S \/usr\/local\/lib\/nodefleet\/zg-validator\.py \/etc\/nodefleet\/validator-1\/validator\.json upgrade-watch$/m);
        assert.match(unit, /^Restart=on-failure$/m);
    });

    it("stages the new release's units and the watcher, and passes shellcheck; without an upgrade the script is what it was", () => {
        requireTool("shellcheck", "shellcheck");
        const args = { host: "h-validator", node: node(), mount: "/data", release: chainRelease(), publicIp: "198.51.100.30" };
        const script = renderValidatorConfigure({ ...args, upgrade: UPGRADE });
        const file = golden("validator/configure-upgrade.sh", script);
        const r = runTool("shellcheck", ["--shell=sh", "--severity=style", file]);
        assert.equal(r.status, 0, r.output);
        const staged = [...script.matchAll(/^put (\S+) 0644 root:root <<'NODEFLEET_EOF'$/gm)].map((m) => m[1]);
        for (const unit of ["0gchaind-validator-1.service", "geth-validator-1.service", "reth-validator-1.service"]) assert.ok(staged.includes(`/etc/nodefleet/validator-1/upgrade/${unit}`), unit);
        assert.ok(staged.includes("/etc/nodefleet/validator-1/nodefleet-upgrade-validator-1.service"));
        // The staged consensus and geth units start the new release's own directory; the running ones the old.
        const next = `/opt/nodefleet/releases/0g-chain-next-${NEXT.sha256.slice(0, 24)}/bin`;
        const old = `/opt/nodefleet/releases/0g-chain-${"06".repeat(12)}/bin`;
        const unitText = (name: string) => script.split(`put ${name} 0644 root:root <<'NODEFLEET_EOF'\n`)[1]!.split("NODEFLEET_EOF")[0]!;
        assert.match(unitText("/etc/nodefleet/validator-1/upgrade/0gchaind-validator-1.service"), new RegExp(`^ExecStart=${next}/0gchaind `, "m"));
        assert.match(unitText("/etc/nodefleet/validator-1/upgrade/geth-validator-1.service"), new RegExp(`^ExecStart=${next}/geth `, "m"));
        assert.match(unitText("/etc/nodefleet/validator-1/0gchaind-validator-1.service"), new RegExp(`^ExecStart=${old}/0gchaind `, "m"));
        const without = renderValidatorConfigure(args);
        assert.doesNotMatch(without, /nodefleet-upgrade|\/upgrade\/|An upgrade at a height/, "no upgrade: nothing of it staged (its host tool, zgvalidator/upgrade.py, is installed as every module)");
        assert.equal(without, renderValidatorConfigure({ ...args, upgrade: undefined }));
    });

    it("the settings carry the upgrade for the host tool: release, height, staged units, the release's directory", () => {
        const s = JSON.parse(validatorSettingsJson(node(), "/data", chainRelease(), null, false, UPGRADE));
        assert.deepEqual(s.upgrade, { release: "0g-chain-next", height: 1200, units: "/etc/nodefleet/validator-1/upgrade", releaseDir: `/opt/nodefleet/releases/0g-chain-next-${NEXT.sha256.slice(0, 24)}` });
        assert.equal(JSON.parse(validatorSettingsJson(node(), "/data", chainRelease())).upgrade, undefined);
    });

    it("the configure step waits for the upgrade's release install on the host, and removing the node disarms the watcher", async () => {
        const f = fleetWith();
        f.nodes = [f.nodes[V]];
        f.releases = { "0g-chain": f.releases["0g-chain"], "0g-chain-next": { ...NEXT } };
        delete f.hosts["h-storage"];
        delete f.hosts["h-sequencer"];
        const { recorded } = await buildStack(f, SECRETS);
        const deps = recorded.find((r: any) => r.name === "fleet-validator-1-configure")?.dependsOn;
        assert.deepEqual(deps?.sort(), ["fleet-h-validator-release-0g-chain-next", "fleet-validator-1-validator-key"]);
        assert.match(scriptOf("fleet-validator-1-configure"), /upgrade-watch/);
    });
});

describe("an upgrade at a height: the height against the network's, at preview", () => {
    /** A CometBFT RPC's /status at `height`, as beacond answers it (the fields read). */
    const rpc = (height: string | null): Get => async (url) => {
        assert.equal(url, "http://198.51.100.9:26657/status");
        if (height === null) return { ok: false, status: 503, text: async () => "" };
        return { ok: true, status: 200, text: async () => JSON.stringify({ jsonrpc: "2.0", id: -1, result: { node_info: { network: "zgtendermint_16601-2" }, sync_info: { latest_block_height: height } } }) };
    };
    const plan = (rpcUrl?: string) => parseFleet(fleetWith((f) => rpcUrl && (f.nodes[V].validator.consensusRpcUrl = rpcUrl)), secretSource());

    it("ahead of the network: the blocks left, logged", async () => {
        const r = await checkUpgradeHeights(plan("http://198.51.100.9:26657"), rpc("1150"));
        assert.deepEqual(r.refused, []);
        assert.deepEqual(r.lines, ["upgrade: validator-1 moves to 0g-chain-next at height 1200; network zgtendermint_16601-2 is at 1150: 50 blocks left"]);
    });

    it("a height the network has reached or passed is refused with the figures", async () => {
        for (const h of ["1200", "1500"]) {
            const r = await checkUpgradeHeights(plan("http://198.51.100.9:26657"), rpc(h));
            assert.deepEqual(r.refused, [`nodes[2].validator.upgrade.height: 1200 is not ahead of network zgtendermint_16601-2, already at height ${h}: an upgrade is scheduled ahead of the chain. If validator-1 already moved to 0g-chain-next at 1200, name 0g-chain-next in its release and remove upgrade`]);
        }
    });

    it("an RPC that does not answer, or answers without a height, is refused naming the field; none configured: the host checks", async () => {
        const down = await checkUpgradeHeights(plan("http://198.51.100.9:26657"), rpc(null));
        assert.match(down.refused[0]!, /^nodes\[2\]\.validator\.consensusRpcUrl \(http:\/\/198\.51\.100\.9:26657\): the network's height cannot be read, so nodes\[2\]\.validator\.upgrade\.height cannot be checked against it: \/status: HTTP 503$/);
        const bad = await checkUpgradeHeights(plan("http://198.51.100.9:26657"), rpc("12x"));
        assert.match(bad.refused[0]!, /\/status: result\.sync_info\.latest_block_height: not a whole number$/);
        const none = await checkUpgradeHeights(plan(), rpc("1"));
        assert.deepEqual(none.refused, []);
        assert.match(none.lines[0]!, /no consensusRpcUrl\): the host refuses a height its node has passed$/);
    });

    it("the watcher's unit and the host tool agree on its name", () => {
        const tool = fs.readFileSync(path.join(HOSTFILES_DIR, "zgvalidator/upgrade.py"), "utf8");
        assert.match(tool, /return f"nodefleet-upgrade-\{node\}\.service"/);
        assert.equal(upgradeWatcherUnit("validator-1"), "nodefleet-upgrade-validator-1.service");
    });
});
