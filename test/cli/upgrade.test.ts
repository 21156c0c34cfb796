// Real-CLI tier: upgrading nodefleet under a running fleet. The dev fleet is brought up by an
// earlier nodefleet (its program taken from this repository's history with `git archive`), then
// previewed and brought up by this one, with the real engine and command provider against the
// scripted hosts (lab/sim/scripted-host: real SSH, runs nothing). What it proves: the upgrade
// changes steps in place (updates: each step runs its script once more, and every step is safe to
// run again), never deletes one (a deleted teardown step would run its removal and stop a node) and
// replaces none but those the version says (STEPS_REPLACED), and leaves nothing to do after it;
// and that steps moved under a new component (the gates, the monitoring) keep their addresses by
// their aliases: a monitored, gated fleet's next plan creates the components and nothing else.
// What it cannot prove (the hosts run nothing): what the steps do on a host; the e2e tier does.
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT, type ScratchProject } from "../support/cli";
import { ScriptedHosts, onScriptedHosts } from "../support/scripted-hosts";

/**
 * The nodefleet an operator upgrades from: the previous stop's version. Move it forward when a
 * change that reaches the state lands (and say in the commit what an upgrade from it runs).
 */
const PREVIOUS = "aa1f9c5";
/**
 * The steps this version replaces once, and why it is safe: a step's triggers hold its script's
 * digest. The validator's and the sequencer's configure scripts changed: their units (geth and the
 * consensus daemon; the Aztec node of `runtime: release`) now start the binary from the release
 * version's own directory, not through the release's link, so that a new release restarts the
 * node (gated when the fleet has a `rollout`), as the storage node's unit has since 0cca963. So
 * configure runs once more: the validator's `setup` restarts geth (the consensus daemon held
 * meanwhile) and then 0gchaind for their changed units, the sequencer's configure restarts the
 * Aztec node once; the binaries are the same files. Health, whose triggers hold configure's
 * digest, reads each node again. Neither has a delete command: the old steps' removal runs
 * nothing. The release installs are replaced once too: their script changed (a version a staged
 * unit names is kept). Run again, an install finds its verified directory and downloads nothing,
 * points the link where it already points and restarts nothing; their removal is held by the
 * teardown steps, which are not replaced. Since then the storage node's configure script changed
 * too, and every role's health step: a node that does not run after its restart fails the health
 * step (read-only) instead of the configure step, which warns; so the storage node's configure and
 * health steps are replaced once as well: configure finds its files unchanged and restarts nothing,
 * health reads the node again. Since then every script that writes files through put() changed
 * (each file is staged under a name of its own call's): the firewall's confirm step and the nodes'
 * key steps are replaced once too; each finds the files it puts unchanged, so no node restarts and
 * the firewall is confirmed as it is. Since then the sequencer's registration and version scripts
 * cite the spec's page in their header comments: both are replaced once; the registration finds the
 * validator registered (or queued) and sends nothing, the version step finds the version installed.
 * Since then the storage node's unit is stopped by a host tool of its own (docs/roles.md, the storage
 * node's "Its stop"): its configure step, replaced already, installs the tool, writes the new unit
 * and restarts zgs_node once. Since then every host's bootstrap keeps the ports its services
 * listen on out of the kernel's ephemeral range (docs/hosts.md): each host's bootstrap step is
 * replaced once; it finds its packages, user and data directories in place and reserves the ports.
 */
const STEPS_REPLACED = [
    "fleet-dev-1-bootstrap",
    "fleet-dev-1-firewall-confirm",
    "fleet-dev-1-release-aztec",
    "fleet-dev-1-release-zgs",
    "fleet-dev-2-bootstrap",
    "fleet-dev-2-firewall-confirm",
    "fleet-dev-2-release-0g-chain",
    "fleet-sequencer-1-configure",
    "fleet-sequencer-1-health",
    "fleet-sequencer-1-registration",
    "fleet-sequencer-1-validator-key",
    "fleet-sequencer-1-version",
    "fleet-storage-1-configure",
    "fleet-storage-1-health",
    "fleet-storage-1-miner-key",
    "fleet-validator-1-configure",
    "fleet-validator-1-health",
    "fleet-validator-1-validator-key",
];
/** The program's files: what `git archive` takes from the previous version. */
const PROGRAM = ["index.ts", "components", "templates", "hostfiles"];
/**
 * The dev config as the earlier versions read it, and this one with them: the release runtime named
 * (their default was docker; this version's default is release), no release `version` nor
 * `simulator` (keys they do not know; neither changes a resource).
 */
const DEV_CONFIG = fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8")
    .replace(/^( {10}publicIp: 10\.77\.0\.11\n)/m, "$1          runtime: release\n")
    .replace(/^ {8}version: \S+\n/gm, "")
    .replace(/^ {8}# Its bin\/0gchaind is the lab's simulator[^\n]*\n( {8}#[^\n]*\n)*^ {8}simulator: true\n/m, "");
/**
 * The dev config as PREVIOUS knew it, so that both runs read one config and only the program
 * changes: PREVIOUS has no release `consensus` nor `consensusPeers`, and takes only ed25519
 * validator keys (the dev key it held, encrypted with the dev passphrase, not the BLS12-381 one the
 * dev stack's beacond has now).
 */
const PREVIOUS_DEV_KEY = "v1:5/yjzllvqEvCNp+H:e5+YRVBMM3XS8TIktpQdi8FKRAvfrXfF+qCC+p9uFRVx2lBD3sVUeMVbXkFNGUET3Mgvr4K1/J6sP2yL8JqG2ViFQVWyCyS0XdewPL6JVZMbI/nPekJyVvGUVlvtrltcUoRW3r++2BHDRFE8KyHjNZexU7ivTesnykj4v2HoL1ciO3Jl9Steesz3LnKCeWj0i9gE4fCCjfxz8+lHrjvjVN/3kFNZbe99jRf3PZLpvN2Ib80p9AiLFG0CDgfOKKx4RlJdXE/Vkr8dxq1dGow5fSiavTGVTTVNlxm2gO/Vb48G8Tnl0rBiEWBhsRgzn98WzES8oE7iJDv3lHwRmjC0LWyePT/lGr5YYdwGFSyRbbkMOtRefVyBgMYOmeJ0JvLrALL9iK6uPOGG7h46bpHrTXiNQn+J6dw0lPeFB3OliWzW5n8Sz/hzDaeFNliCfXLvKTqQh/AKsO8U/su91T45ZhnmEwKBLOq1jA==";
const PREVIOUS_CONFIG = DEV_CONFIG.replace(/^ {8}# The real BeaconKit beacond[^\n]*\n(^ {8}#[^\n]*\n)*^ {8}consensus:\n(^ {10}[^\n]*\n)+/m, "")
    .replace(/^ {10}# The network's other validator, on the runner \(lab\/devchain\.sh;[^\n]*\n(^ {10}#[^\n]*\n)*^ {10}consensusPeers: [^\n]*\n/m, "")
    .replace(/(nodefleet:devValidatorKey:\n\s+secure: )\S+/, `$1${PREVIOUS_DEV_KEY}`);

/** A scratch project on the scripted hosts whose program can be set to any version of this repository's. */
class UpgradedProject {
    readonly lab = new ScriptedHosts();
    project!: ScratchProject;

    async start(stack: string, config: string): Promise<void> {
        // Its sources through ts-node: program() puts another version's in place, which has no dist/.
        ({ project: this.project } = await this.lab.start(stack, (p) => onScriptedHosts(config, p), undefined, undefined, "typescript"));
    }

    /** Replaces the scratch project's program with the one at `rev` (`undefined`: this checkout's). */
    program(rev?: string): void {
        const dir = this.project.dir;
        for (const f of PROGRAM) fs.rmSync(path.join(dir, f), { recursive: true, force: true });
        if (rev === undefined) {
            for (const f of PROGRAM) fs.cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true });
            return;
        }
        const archive = spawnSync("git", ["-C", ROOT, "archive", "--format=tar", rev, ...PROGRAM], { maxBuffer: 1 << 28 });
        assert.equal(archive.status, 0, `git archive ${rev} (the repository's history is needed: a full clone): ${archive.stderr}`);
        const untar = spawnSync("tar", ["-x", "-C", dir], { input: archive.stdout });
        assert.equal(untar.status, 0, String(untar.stderr));
    }

    up() {
        return this.project.pulumi(["up", "--stack", this.project.stack, "--yes", "--skip-preview", "--non-interactive", "--color", "never"]);
    }

    /** The plan of a preview: each operation's resources, as `type::name`. */
    plan(): Map<string, string[]> {
        const preview = this.project.pulumi(["preview", "--stack", this.project.stack, "--non-interactive", "--json"]);
        assert.equal(preview.status, 0, preview.output.slice(-4000));
        const steps = (JSON.parse(preview.stdout) as { steps: { op: string; urn: string }[] }).steps;
        const ops = new Map<string, string[]>();
        for (const s of steps) {
            // urn:pulumi:<stack>::<project>::<parent types $ type>::<name>
            const [, , types, name] = s.urn.split("::");
            ops.set(s.op, [...(ops.get(s.op) ?? []), `${types!.split("$").pop()}::${name}`]);
        }
        return ops;
    }

    dispose(): void {
        this.lab.dispose();
    }
}

/** Skips `t` when the repository lacks `rev` (a shallow clone): said, not hidden. */
function hasCommit(t: { skip: (why: string) => void }, rev: string): boolean {
    if (spawnSync("git", ["-C", ROOT, "cat-file", "-e", `${rev}^{commit}`]).status === 0) return true;
    t.skip(`the repository has no commit ${rev} (a shallow clone): the upgrade is not checked`);
    return false;
}

const names = (ops: Map<string, string[]>, op: string) => (ops.get(op) ?? []).map((u) => u.split("::").pop()!);

describe("upgrading nodefleet under a running fleet (real engine, scripted hosts)", { timeout: 15 * 60_000 }, () => {
    const fleet = new UpgradedProject();

    before(async () => {
        assert.ok(!/consensus|cometbft/.test(PREVIOUS_CONFIG.replace(/l1ConsensusHostUrls/g, "")), "the previous version's config has no consensus settings");
        await fleet.start("upgrade", PREVIOUS_CONFIG);
    });
    after(() => fleet.dispose());

    it(`from ${PREVIOUS}: every changed step is updated in place, none deleted, none replaced but those this version names; then nothing is left to do`, (t) => {
        if (!hasCommit(t, PREVIOUS)) return;
        fleet.program(PREVIOUS);
        const first = fleet.up();
        assert.equal(first.status, 0, first.output.slice(-4000));

        fleet.program();
        const ops = fleet.plan();
        console.log(`# the upgrade's plan: ${JSON.stringify(Object.fromEntries([...ops].map(([op, n]) => [op, n.length])))}`);
        // The components this version adds (a gate's, the monitoring's) hold steps that existed before.
        const created = (ops.get("create") ?? []).filter((u) => !COMPONENTS_ADDED.includes(u.split("::")[0]!));
        assert.deepEqual([...ops.keys()].filter((op) => !["same", "update", "read", "replace", "create"].includes(op)), [], `only updates: ${JSON.stringify(Object.fromEntries(ops))}`);
        assert.deepEqual(created, [], "nothing created but the components this version adds");
        assert.deepEqual(names(ops, "replace").sort(), STEPS_REPLACED, `replaced: only the steps this version says: ${JSON.stringify(Object.fromEntries(ops))}`);

        const second = fleet.up();
        assert.equal(second.status, 0, second.output.slice(-4000));
        const again = fleet.project.preview("--expect-no-changes");
        assert.equal(again.status, 0, again.output.slice(-4000));
    });
});

/**
 * The last version whose monitoring and rollout gates were steps of the fleet and of the roles
 * directly; they are components of their own since, and their steps keep their addresses by aliases.
 */
const BARE_STEPS = "e76fb76";
const COMPONENTS_ADDED = ["nodefleet:rollout:Gate", "nodefleet:monitoring:Agent", "nodefleet:monitoring:Server"];
/**
 * What changed since that version besides the move, and what an upgrade from it therefore runs:
 * the health tools stop waiting at a crash loop (hostfiles/nodefleet_units.py, shipped to storage
 * and sequencer hosts and with every gate). Each host's tool copy is updated; the storage and
 * sequencer configure and health steps and every gate are replaced once: configure finds the
 * node's files unchanged and restarts nothing (no node reads nodefleet's tools), health reads the
 * node again, and each gate runs again on a node that was not restarted (healthy: it passes after
 * its soak). Since then the release install sets an unused version aside and leaves its deletion to
 * a unit of its own: each host's release installs are replaced once; run again, an install finds its
 * verified directory, downloads nothing, points the link where it points and restarts nothing;
 * their teardown steps are updated (the removal they hold now also takes what an install set
 * aside), which runs only their `echo`. Since then too a gated node's health step records its
 * services' restart counts for its gate (templates/health/health-step.sh.hbs): the validator's health
 * step is replaced once as well, and runs its health tool again (read-only unless the consensus
 * daemon logs the fault its remedy is for). Since then too the Aztec node's unit gives it 20 s to
 * stop (docs/roles.md, "Its stop"): the sequencer's configure step, replaced already, writes the
 * new unit and restarts the node once; and the storage node's unit is stopped by a host tool of its
 * own: its configure step, replaced already, installs the tool, writes the new unit and restarts
 * zgs_node once. Since then too the diagnosis table (hostfiles/nodefleet_health.py) reads a stopped
 * sequencer as down whatever its last process logged: each monitoring agent is replaced once and
 * puts the new table in place (its files otherwise unchanged: nothing restarts; the health timer
 * reads the table at its next round); the gates, replaced already, take it too. Since then too the
 * validator's host tool package has a module of its own for the export both switch modes run
 * (hostfiles/zgvalidator/exporting.py): the validator's configure step, which installs the package,
 * is replaced once; its setup finds the node's files unchanged and restarts nothing. Since then too
 * one alert's remedy annotation is the fault table's words (NodefleetHeightStalled): the monitoring
 * server's step is replaced once, writes the new rule file and reloads Prometheus. Since then too
 * validators may take an upgrade at a height (docs/rollouts.md): the fault table and the diagnosis
 * table know its three codes (the monitoring steps, configure steps and gates replaced already put
 * them in place; the rule file gains their alerts), and a validator's removal script also removes
 * the upgrade's watcher unit: its teardown step is updated in place (its destroy runner names the
 * new script; nothing runs on the host until a destroy). Since then too every host's bootstrap
 * keeps its services' listening ports out of the ephemeral range (docs/hosts.md): each host's
 * bootstrap step is replaced once and finds everything else it sets up in place.
 */
const UPDATED_SINCE_MOVE = [
    "command:remote:Command::fleet-dev-1-release-aztec-teardown", "command:remote:Command::fleet-dev-1-release-zgs-teardown", "command:remote:Command::fleet-dev-2-release-0g-chain-teardown",
    "command:remote:Command::fleet-validator-1-teardown",
    "command:remote:CopyToRemote::fleet-dev-1-tools", "command:remote:CopyToRemote::fleet-dev-2-tools",
];
const STEPS_REPLACED_SINCE_MOVE = [
    "fleet-dev-1-bootstrap", "fleet-dev-1-monitoring", "fleet-dev-1-monitoring-agent", "fleet-dev-1-release-aztec", "fleet-dev-1-release-zgs",
    "fleet-dev-2-bootstrap", "fleet-dev-2-monitoring-agent", "fleet-dev-2-release-0g-chain",
    "fleet-sequencer-1-configure", "fleet-sequencer-1-gate", "fleet-sequencer-1-health",
    "fleet-storage-1-configure", "fleet-storage-1-gate", "fleet-storage-1-health",
    "fleet-validator-1-configure", "fleet-validator-1-gate", "fleet-validator-1-health",
];
/** The dev config with monitoring on dev-1 and a rollout for every role: every gate and monitoring step is made. */
const MONITORED_CONFIG = DEV_CONFIG.replace(
    /^ {4}releases:\n/m,
    [
        "    monitoring:",
        "      host: dev-1",
        "      addresses: {dev-1: 10.77.0.11, dev-2: 10.77.0.12}",
        "    rollout:",
        "      roles:",
        "        storage: { onFailure: rollback }",
        "        sequencer: { onFailure: rollback }",
        "        validator: { onFailure: halt }",
        "    releases:",
        "",
    ].join("\n"),
);

describe("upgrading a monitored, gated fleet across the components' move (real engine, scripted hosts)", { timeout: 15 * 60_000 }, () => {
    const fleet = new UpgradedProject();

    before(() => fleet.start("upgrade-components", MONITORED_CONFIG));
    after(() => fleet.dispose());

    it(`from ${BARE_STEPS}: the gate and monitoring steps, now under components of their own, are the same resources: none created or deleted, and none replaced but the steps whose scripts changed since`, (t) => {
        if (!hasCommit(t, BARE_STEPS)) return;
        fleet.program(BARE_STEPS);
        const first = fleet.up();
        assert.equal(first.status, 0, first.output.slice(-4000));
        assert.match(first.output, /fleet-storage-1-gate/, "the old version made the gate");

        fleet.program();
        const ops = fleet.plan();
        console.log(`# the components' move: ${JSON.stringify(Object.fromEntries([...ops].map(([op, n]) => [op, n.length])))}`);
        // The stack reference is read on every run; nothing is deleted; what is updated or replaced
        // is what changed since that version besides the move (UPDATED_SINCE_MOVE, STEPS_REPLACED_SINCE_MOVE).
        assert.deepEqual([...ops.keys()].filter((op) => op !== "read").sort(), ["create", "replace", "same", "update"], JSON.stringify(Object.fromEntries(ops)));
        assert.deepEqual(ops.get("update")!.sort(), UPDATED_SINCE_MOVE, "updated: the hosts' tool copies and release teardowns alone");
        assert.deepEqual(ops.get("replace")!.map((u) => u.split("::")[1]).sort(), STEPS_REPLACED_SINCE_MOVE, "replaced: the steps whose scripts changed since");
        const created = ops.get("create")!;
        assert.deepEqual([...new Set(created.map((u) => u.split("::")[0]))].sort(), [...COMPONENTS_ADDED].sort(), "created: the new components alone");
        assert.deepEqual(created.map((u) => u.split("::")[1]).sort(), [
            "fleet-dev-1-monitoring", "fleet-dev-1-monitoring-agent", "fleet-dev-2-monitoring-agent",
            "fleet-sequencer-1-gate", "fleet-storage-1-gate", "fleet-validator-1-gate",
        ]);
        assert.ok(created.every((u) => !u.startsWith("command:")), "no step is created: each is found at its old address");

        const second = fleet.up();
        assert.equal(second.status, 0, second.output.slice(-4000));
        const again = fleet.project.preview("--expect-no-changes");
        assert.equal(again.status, 0, again.output.slice(-4000));
    });
});

/**
 * The last version before each role's knowledge moved into a folder of its own (components/roles/
 * <role>/: its contract, its components) and the fleet made its nodes through the roles' registry:
 * files and functions moved, no resource, script or input did.
 */
const BEFORE_ROOMS = "07b5dcc";
/**
 * The version the move ended at: later versions change what the hosts run (a host tool's copy and
 * the steps that name its digest), which is not what this case is about.
 */
const ROOMS = "7a27b2d";

describe("upgrading a monitored, gated fleet across the roles' rooms (real engine, scripted hosts)", { timeout: 15 * 60_000 }, () => {
    const fleet = new UpgradedProject();

    before(() => fleet.start("upgrade-rooms", MONITORED_CONFIG));
    after(() => fleet.dispose());

    it(`from ${BEFORE_ROOMS} to ${ROOMS}: every resource the same, nothing to do`, (t) => {
        if (!hasCommit(t, BEFORE_ROOMS) || !hasCommit(t, ROOMS)) return;
        fleet.program(BEFORE_ROOMS);
        const first = fleet.up();
        assert.equal(first.status, 0, first.output.slice(-4000));
        assert.match(first.output, /fleet-validator-1-gate/, "the old version made the gated, monitored fleet");

        fleet.program(ROOMS);
        const ops = fleet.plan();
        console.log(`# the rooms' move: ${JSON.stringify(Object.fromEntries([...ops].map(([op, n]) => [op, n.length])))}`);
        // The stack reference is read on every run; nothing is created, updated, replaced or deleted.
        assert.deepEqual([...ops.keys()].filter((op) => op !== "read"), ["same"], JSON.stringify(Object.fromEntries(ops)));
        const again = fleet.project.preview("--expect-no-changes");
        assert.equal(again.status, 0, again.output.slice(-4000));
    });
});
