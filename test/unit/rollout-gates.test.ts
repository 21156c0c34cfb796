// Health-gated rollouts, as the program builds them: with a `rollout` section each node
// gets a gate step after its health step, and a role's batches follow each other through
// `dependsOn` (a node's key step, its first step that can restart it, waits for the gates of the
// batch before it). Strict mocks: what they cannot prove is that the engine keeps the order or
// that a gate waits on a host (hostfiles/tests/test_gate.py runs the gate itself; the VM tier is
// still to come, see docs/rollouts.md).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import { buildStack } from "../support/stack";
import { baseFleet, configIssues, existingHost, SECRETS, storageNode } from "../support/fixtures";
import { inputsOf, registered, scriptOf } from "../support/mocks";
import { golden, runTool } from "../support/golden";
import { gateEverySeconds, renderGate } from "../../components/rollout/gate";
import { parseFleet } from "../../components/config/fleet";
import { renderStorageRemove } from "../../components/roles/storage/node";
import { renderSequencerRemove } from "../../components/roles/sequencer/node";
import { renderValidatorRemove } from "../../components/roles/validator/node";
import { secretSource } from "../support/fixtures";

/** The base fleet with four storage nodes on two hosts (ports apart on each) and `rollout`. */
function fleetWithStorage(rollout: unknown): any {
    const f = baseFleet();
    f.hosts["h-storage-2"] = existingHost("192.0.2.20");
    const storage = [1, 2, 3, 4].map((i) => {
        const n = storageNode();
        n.name = `storage-${i}`;
        n.host = i % 2 === 1 ? "h-storage" : "h-storage-2";
        const k = i <= 2 ? 0 : 10; // the second node on a host takes other ports
        Object.assign(n.storage, { p2pPort: 1234 + k, rpcPort: 5678 + k, adminRpcPort: 5679 + k, grpcPort: 50051 + k, minerKeySecret: i === 1 ? "minerKey" : `minerKey${i}` });
        return n;
    });
    f.nodes = [...storage, ...f.nodes.slice(1)];
    if (rollout !== undefined) f.rollout = rollout;
    return f;
}

/** The fixtures' secrets and a miner key of each other storage node's own. */
const KEYS = { ...SECRETS, minerKey2: "2".repeat(64), minerKey3: "3".repeat(64), minerKey4: "4".repeat(64) };

const deps = (recorded: { name: string; custom: boolean; dependsOn: string[] }[], name: string) => {
    const r = recorded.find((x) => x.name === name && x.custom);
    assert.ok(r, `no step ${name}`);
    return r.dependsOn;
};

describe("rollout gates: the steps and their order", () => {
    it("with the defaults: storage a quarter at a time (one of four), each batch's key steps after the previous batch's gates", async () => {
        const { recorded } = await buildStack(fleetWithStorage({}), KEYS);
        assert.deepEqual(deps(recorded, "fleet-storage-1-miner-key"), ["fleet-storage-1-teardown"], "the first batch waits for nothing");
        assert.deepEqual(deps(recorded, "fleet-storage-2-miner-key"), ["fleet-storage-2-teardown", "fleet-storage-1-gate"]);
        assert.deepEqual(deps(recorded, "fleet-storage-3-miner-key"), ["fleet-storage-3-teardown", "fleet-storage-2-gate"], "across hosts: storage-2 is on the other host");
        assert.deepEqual(deps(recorded, "fleet-storage-4-miner-key"), ["fleet-storage-4-teardown", "fleet-storage-3-gate"]);
        // After its node's health step (and its host's bundle copy: it runs a script of it).
        const steps = (name: string) => deps(recorded, name).filter((d) => !d.endsWith("-tools"));
        for (const i of [1, 2, 3, 4]) assert.deepEqual(steps(`fleet-storage-${i}-gate`), [`fleet-storage-${i}-health`]);
        // One node per role elsewhere: gated, in a batch of its own.
        assert.deepEqual(steps("fleet-sequencer-1-gate"), ["fleet-sequencer-1-health"]);
        assert.deepEqual(steps("fleet-validator-1-gate"), ["fleet-validator-1-health"]);
        assert.deepEqual(deps(recorded, "fleet-validator-1-validator-key"), ["fleet-validator-1-teardown"]);
    });

    it("a batch of two and an explicit order: each of a batch waits for both gates of the one before", async () => {
        const { recorded } = await buildStack(fleetWithStorage({ roles: { storage: { batchSize: 2 } }, order: ["storage-4"] }), KEYS);
        // Order: storage-4 first, then the rest by name: [4, 1], [2, 3].
        assert.deepEqual(deps(recorded, "fleet-storage-4-miner-key"), ["fleet-storage-4-teardown"]);
        assert.deepEqual(deps(recorded, "fleet-storage-1-miner-key"), ["fleet-storage-1-teardown"]);
        assert.deepEqual(deps(recorded, "fleet-storage-2-miner-key"), ["fleet-storage-2-teardown", "fleet-storage-4-gate", "fleet-storage-1-gate"]);
        assert.deepEqual(deps(recorded, "fleet-storage-3-miner-key"), ["fleet-storage-3-teardown", "fleet-storage-4-gate", "fleet-storage-1-gate"]);
    });

    it("without a rollout section there is no gate and no node waits for another", async () => {
        const { recorded } = await buildStack(fleetWithStorage(undefined), KEYS);
        assert.deepEqual(recorded.filter((r) => r.name.endsWith("-gate")).map((r) => r.name), []);
        for (const i of [2, 3, 4]) assert.deepEqual(deps(recorded, `fleet-storage-${i}-miner-key`), [`fleet-storage-${i}-teardown`]);
        assert.ok(!registered.some((r) => r.type === "command:remote:Command" && String(r.inputs.stdin ?? "").includes("nodefleet_gate")));
    });

    it("the gate runs the role's health tool under the role's policy, from the host's bundle, which carries the gate's tools, and watches the node's services for a crash loop", async () => {
        await buildStack(fleetWithStorage({ roles: { storage: { healthyWithinSeconds: 300, soakSeconds: 30 } } }), KEYS);
        assert.match(scriptOf("fleet-storage-3-gate"), /^exec python3 \/usr\/local\/lib\/nodefleet\/nodefleet_gate\.py storage storage-3 --within 300 --soak 30 --every 6 --marker \/var\/lib\/nodefleet\/gate\/storage-3 --unit zgs-storage-3\.service -- python3 \/usr\/local\/lib\/nodefleet\/zgs-health\.py storage-3$/m);
        assert.match(scriptOf("fleet-validator-1-gate"), /nodefleet_gate\.py validator validator-1 --within 600 --soak 120 .* --unit geth-validator-1\.service --unit reth-validator-1\.service --unit 0gchaind-validator-1\.service -- python3 -S \/usr\/local\/lib\/nodefleet\/zg-validator\.py \/etc\/nodefleet\/validator-1\/validator\.json status$/m);
        assert.match(scriptOf("fleet-sequencer-1-gate"), /nodefleet_gate\.py sequencer sequencer-1 --within 600 --soak 120 .* --unit aztec-sequencer-1\.service -- python3 \/usr\/local\/lib\/nodefleet\/aztec-health\.py sequencer-1$/m);
        // Into the host's tool directory, beside every other step's (put() stages each file under a
        // name of its own); the directory each node's gate had before is removed.
        for (const tool of ["nodefleet_gate.py", "nodefleet_health.py", "zgvalidator/steps.json"]) assert.match(scriptOf("fleet-storage-3-gate"), new RegExp(`^put_tool /usr/local/lib/nodefleet/${tool.replace(".", "\\.")} `, "m"));
        assert.match(scriptOf("fleet-storage-3-gate"), /^rm -rf \/var\/lib\/nodefleet\/gate\/storage-3\.tools$/m);
    });

    it("a gate runs again when what restarts its node changes, a validator's after a switch too", async () => {
        const triggers = async (mutate: (f: any) => void) => {
            const f = fleetWithStorage({});
            mutate(f);
            await buildStack(f, KEYS);
            return { storage: JSON.stringify(inputsOf("fleet-storage-1-gate").triggers), other: JSON.stringify(inputsOf("fleet-storage-2-gate").triggers), validator: JSON.stringify(inputsOf("fleet-validator-1-gate").triggers) };
        };
        const before = await triggers(() => {});
        const changed = await triggers((f) => f.nodes[0].storage.rpcEndpoints.push("https://rpc.example.org"));
        assert.notEqual(changed.storage, before.storage, "storage-1's endpoints changed: its gate runs");
        assert.equal(changed.other, before.other, "storage-2 did not change: its gate does not run");
        const validator = (f: any) => f.nodes.find((n: any) => n.role === "validator").validator;
        for (const sw of [{ switch: "migrate", executionClient: "reth", lowDowntime: true }, { switch: "rollback" }]) {
            const switched = await triggers((f) => Object.assign(validator(f), sw));
            assert.notEqual(switched.validator, before.validator, `a switch restarts the node: its gate runs after the switch's steps (${JSON.stringify(sw)})`);
        }
        const moved = await triggers((f) => (validator(f).publicIp = "203.0.113.77"));
        assert.notEqual(moved.validator, before.validator, "a setting the validator's daemons read: its gate runs");
        const reference = await triggers((f) => (validator(f).referenceRpcUrl = "https://reference.example.org"));
        assert.notEqual(reference.validator, before.validator, "a new reference endpoint: its gate runs");
    });

    it("every role's gate follows its health step and holds its key and configure steps' ids: a run back to a config whose gate passed before is gated too", async () => {
        // A failed gate keeps the inputs of its last pass; the configure step is replaced (a new id)
        // each time it runs. Seen on the lab hosts: a release set back after a halt restarted
        // storage-1, and its gate, its inputs those of the last pass, did not run.
        const { recorded } = await buildStack(fleetWithStorage({}), KEYS);
        for (const node of ["storage-1", "sequencer-1", "validator-1"]) {
            const t = inputsOf(`fleet-${node}-gate`).triggers;
            for (const step of ["configure", node.startsWith("storage") ? "miner-key" : "validator-key"]) {
                assert.ok(t.includes(`fleet-${node}-${step}-id`), `${node}'s gate: ${step} in ${JSON.stringify(t)}`);
            }
            assert.ok(deps(recorded, `fleet-${node}-gate`).includes(`fleet-${node}-health`), node);
        }
    });
});

describe("rollout gates: the switch under a rollout", () => {
    // Two validators, one a batch: validator-1 switches. Strict mocks: the order is the engine's
    // (test/scenarios/switch-rollout.ts shows it on the lab's hosts, and the gate refusing there).
    function twoValidators(sw: Record<string, unknown>): any {
        const f = baseFleet();
        f.hosts["h-validator-2"] = existingHost("192.0.2.22");
        const v2 = JSON.parse(JSON.stringify(f.nodes.find((n: any) => n.role === "validator")));
        Object.assign(v2, { name: "validator-2", host: "h-validator-2" });
        v2.validator.validatorKeySecret = "validatorKey2";
        f.nodes = [...f.nodes, v2];
        Object.assign(f.nodes.find((n: any) => n.name === "validator-1").validator, sw);
        f.rollout = { roles: { validator: { onFailure: "rollback" } } };
        return f;
    }

    for (const [how, sw, last] of [["ordered", { switch: "migrate", executionClient: "reth" }, "s14-verify"], ["low-downtime", { switch: "migrate", executionClient: "reth", lowDowntime: true }, "l14-verify"], ["rollback", { switch: "rollback" }, "rollback"]] as const) {
        it(`${how}: the health step after the switch's last step, the gate after it, the next batch after the gate`, async () => {
            const { recorded } = await buildStack(twoValidators(sw), KEYS);
            assert.deepEqual(deps(recorded, "fleet-validator-1-health"), [`fleet-validator-1-switch-${last}`]);
            assert.deepEqual(deps(recorded, "fleet-validator-1-gate").filter((d) => !d.endsWith("-tools")), ["fleet-validator-1-health"]);
            assert.ok(deps(recorded, "fleet-validator-2-validator-key").includes("fleet-validator-1-gate"), "validator-2 waits for validator-1's gate");
            assert.ok(!deps(recorded, "fleet-validator-1-validator-key").some((d) => d.endsWith("-gate")), "the first batch waits for no gate");
        });
    }

    it("the gate pins the switch state and the key: a rollback across the switch is refused on the host (hostfiles/tests/test_gate_rollback.py)", async () => {
        await buildStack(twoValidators({ switch: "migrate", executionClient: "reth" }), KEYS);
        const gate = scriptOf("fleet-validator-1-gate");
        assert.match(gate, / --pin \S+\/validator-1\/\.nodefleet-switch\/state\.json /);
        assert.match(gate, / --pin \S+\/validator-1\/0gchaind\/config\/priv_validator_key\.json /);
        assert.doesNotMatch(gate, / --file \S+state\.json /, "never put back");
        // The units kept are the client's it runs when the gate passes: reth's too, after the switch.
        for (const unit of ["geth", "reth", "0gchaind"]) assert.match(gate, new RegExp(` --file /etc/systemd/system/${unit}-validator-1\\.service `));
        assert.match(gate, / --restart reth-validator-1\.service --restart 0gchaind-validator-1\.service /, "after the switch, reth is the client restarted");
    });
});

describe("rollout gates: the gate's script", () => {
    it("matches its golden copy and passes shellcheck", () => {
        const plan = parseFleet(fleetWithStorage({}), secretSource(KEYS));
        const node = plan.spec.nodes.find((n) => n.name === "storage-1")!;
        const file = golden("rollout/storage-1-gate.sh", renderGate(node, { batchSize: 1, healthyWithinSeconds: 900, soakSeconds: 60, onFailure: "halt" }));
        const check = runTool("shellcheck", ["-s", "sh", file]);
        assert.equal(check.status, 0, check.output);
        assert.match(fs.readFileSync(file, "utf8"), / --soak 60 --every 10 --marker /);
    });

    it("asks the health tool five times a soak or more, every 2 s to every 10 s", () => {
        const plan = parseFleet(fleetWithStorage({}), secretSource(KEYS));
        const node = plan.spec.nodes.find((n) => n.name === "storage-1")!;
        const every = (soakSeconds: number) => Number(/ --every (\d+) /.exec(renderGate(node, { batchSize: 1, healthyWithinSeconds: 900, soakSeconds, onFailure: "halt" }))?.[1]);
        assert.deepEqual([0, 4, 10, 14, 15, 49, 50, 60, 120, 86_400].map(every), [2, 2, 2, 2, 3, 9, 10, 10, 10, 10]);
        assert.deepEqual([0, 10, 25, 120].map(gateEverySeconds), [2, 2, 5, 10]);
    });

    it("the config takes onFailure: rollback for every role, fleet-wide or per role", () => {
        assert.deepEqual(configIssues(fleetWithStorage({ roles: { storage: { onFailure: "rollback" }, sequencer: { onFailure: "rollback" }, validator: { onFailure: "rollback" } } }), KEYS), []);
        assert.deepEqual(configIssues(fleetWithStorage({ onFailure: "rollback" }), KEYS), []);
        assert.deepEqual(configIssues(fleetWithStorage({ onFailure: "rollback", roles: { validator: { onFailure: "halt" } } }), KEYS), []);
        assert.deepEqual(configIssues(fleetWithStorage({ order: ["storage-9"] }), KEYS), ['rollout.order[0]: no node named "storage-9" under nodes']);
        assert.deepEqual(configIssues(fleetWithStorage({}), KEYS), []);
    });
});

describe("rollout gates: onFailure rollback (storage, sequencer, validator)", () => {
    const rollback = { roles: { storage: { onFailure: "rollback" } } };
    it("the gate keeps and puts back every file the configure step writes, config.toml too, and restarts the service and its failover timer", async () => {
        await buildStack(fleetWithStorage(rollback), KEYS);
        const gate = scriptOf("fleet-storage-2-gate");
        const kept = [...gate.matchAll(/--file '?([^' ]+)'?/g)].map((m) => m[1]);
        const configure = scriptOf("fleet-storage-2-configure");
        const written = [...configure.matchAll(/^put '?([^' ]+)'? 0644/gm)].map((m) => m[1].replace("\"$etc\"", ""));
        for (const file of written) assert.ok(kept.includes(file), `${file}: written by configure, so kept by the gate (${kept.join(" ")})`);
        assert.ok(kept.some((f) => f.endsWith("/run/config.toml")), "config.toml, which zgs-endpoint renders");
        assert.match(gate, /--keep \/var\/lib\/nodefleet\/gate\/storage-2\.prev /);
        assert.match(gate, /--restart zgs-storage-2\.service --restart zgs-storage-2-failover\.timer --/);
        // The miner key is pinned, never put back: config.toml as kept holds the key it ran with.
        assert.match(gate, / --pin \/etc\/nodefleet\/storage-2\/miner\.key --/);
        assert.ok(!kept.some((f) => f.endsWith("/miner.key")));
        // The configure step clears the mark of a rollback: what it applies is a new change.
        assert.match(configure, /^rm -f \/var\/lib\/nodefleet\/gate\/storage-2\.rolled-back$/m);
        // The sequencer (halt) keeps nothing.
        assert.doesNotMatch(scriptOf("fleet-sequencer-1-gate"), /nodefleet_gate\.py .*--keep/);
    });

    it("a sequencer's gate keeps its unit, settings and versions, pins its env file (key, L1 endpoints) and restarts the Aztec node", async () => {
        await buildStack(fleetWithStorage({ roles: { sequencer: { onFailure: "rollback" } } }), KEYS);
        const gate = scriptOf("fleet-sequencer-1-gate");
        const etc = "/etc/nodefleet/sequencer-1";
        const args = (flag: string) => [...gate.matchAll(new RegExp(`${flag} '?([^' ]+)'?`, "g"))].map((m) => m[1]);
        assert.deepEqual(args("--file"), ["/etc/systemd/system/aztec-sequencer-1.service", `${etc}/sequencer.json`, `${etc}/version`, `${etc}/started-version`]);
        assert.deepEqual(args("--restart"), ["aztec-sequencer-1.service"]);
        assert.deepEqual(args("--pin"), [`${etc}/aztec.env`]);
        assert.match(gate, /--keep \/var\/lib\/nodefleet\/gate\/sequencer-1\.prev /);
        // What the configure step writes and compares is what the gate keeps.
        const configure = scriptOf("fleet-sequencer-1-configure");
        assert.match(configure, /^put "\$etc\/sequencer\.json" 0644/m);
        assert.match(configure, /^put \/etc\/systemd\/system\/"\$service" 0644/m);
        assert.match(configure, /cmp -s "\$etc\/version" "\$etc\/started-version"/);
        assert.match(configure, /^service=aztec-sequencer-1\.service$/m);
        assert.match(configure, /^rm -f \/var\/lib\/nodefleet\/gate\/sequencer-1\.rolled-back$/m);
        // Storage (halt here) keeps nothing.
        assert.doesNotMatch(scriptOf("fleet-storage-2-gate"), /nodefleet_gate\.py .*--keep/);
        assert.doesNotMatch(scriptOf("fleet-storage-2-configure"), /rolled-back/);
    });

    it("a validator's gate keeps its units, settings and staged files, pins its key and switch state, and restarts the execution client, then the consensus daemon once the engine port answers", async () => {
        await buildStack(fleetWithStorage({ roles: { validator: { onFailure: "rollback" } } }), KEYS);
        const gate = scriptOf("fleet-validator-1-gate");
        const etc = "/etc/nodefleet/validator-1";
        const units = ["geth-validator-1.service", "reth-validator-1.service", "0gchaind-validator-1.service"];
        const args = (flag: string) => [...gate.matchAll(new RegExp(`${flag} '?([^' ]+)'?`, "g"))].map((m) => m[1]);
        assert.deepEqual(args("--file"), [...units.map((u) => `/etc/systemd/system/${u}`), `${etc}/validator.json`, `${etc}/app.toml`, `${etc}/config.toml`, ...units.map((u) => `${etc}/${u}`)]);
        assert.deepEqual(args("--restart"), ["geth-validator-1.service", "0gchaind-validator-1.service"], "the execution client first");
        assert.deepEqual(args("--await-port"), ["56551"], "the consensus daemon once the engine port answers");
        assert.deepEqual(args("--pin"), ["/data/validator-1/0gchaind/config/priv_validator_key.json", "/data/validator-1/.nodefleet-switch/state.json"]);
        // Never kept, so never put back: the signing state, the key, the JWT.
        for (const never of ["priv_validator_state.json", "priv_validator_key.json", "jwt.hex"]) assert.ok(!args("--file").some((f) => f.endsWith(never)), never);
        // Every file the configure step stages is kept; it clears the mark of a rollback.
        const configure = scriptOf("fleet-validator-1-configure");
        for (const m of configure.matchAll(/^put (\S+) 0644 root:root <</gm)) {
            const file = m[1]!.replace(/'/g, "");
            assert.ok(args("--file").includes(file), `${file}: staged by configure, so kept by the gate`);
        }
        assert.match(configure, /^rm -f \/var\/lib\/nodefleet\/gate\/validator-1\.rolled-back$/m);
    });

    it("with halt, neither the gate nor the configure step carries any of it", async () => {
        await buildStack(fleetWithStorage({}), KEYS);
        for (const node of ["storage-2", "sequencer-1", "validator-1"]) {
            assert.doesNotMatch(scriptOf(`fleet-${node}-gate`), /nodefleet_gate\.py .*(--keep|--file|--restart|--pin)/);
            assert.doesNotMatch(scriptOf(`fleet-${node}-configure`), /rolled-back/);
        }
    });

    it("a node's removal takes its gate's marker, tools and kept files (a kept config.toml holds its key)", () => {
        const plan = parseFleet(fleetWithStorage(rollback), secretSource(KEYS));
        const node = (name: string) => plan.spec.nodes.find((n) => n.name === name)! as any;
        for (const [name, script] of [
            ["storage-2", renderStorageRemove("h", node("storage-2"), "/data")],
            ["sequencer-1", renderSequencerRemove("h", node("sequencer-1"), "/data")],
            ["validator-1", renderValidatorRemove("h", node("validator-1"), "/data")],
        ]) {
            assert.ok(script.split("\n").includes(`rm -rf /var/lib/nodefleet/gate/${name} /var/lib/nodefleet/gate/${name}.*`), `${name}:\n${script}`);
        }
    });
});
