// Real-CLI tier: the switch's progress lives in Pulumi's state, and a validator that moves host is
// handed over on the host it leaves first. `pulumi up` and `pulumi preview`
// with the real engine and the real command provider, over real SSH, against the scripted host
// (lab/sim/scripted-host): an SSH endpoint that runs nothing, records each step it is asked to
// run and fails the ones the test names. What this proves: a completed step is recorded and not
// run again, a failed one records nothing, a preview mid-switch lists exactly the steps left (in
// order) and a finished switch previews as no change, and a mode already recorded runs again only
// in a new attempt. What it cannot prove (the scripted host does nothing): that the steps do the
// right thing on a host; the E2E tier runs them on VMs.
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { ON_STOCK, ROOT, ScratchProject } from "../support/cli";
import { ScriptedHosts, onScriptedHosts } from "../support/scripted-hosts";
import { SWITCH_STEPS } from "../../components/roles/validator/switch-steps";
import { HOST_TOOLS_DIR, roleTools } from "../../components/hosts/tools";

const DEV_CONFIG = fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
const VALIDATOR = "          validatorKeySecret: devValidatorKey\n";

/** Pulumi.dev.yaml with both hosts at the scripted host and validator-1's switch set. */
function config(ports: readonly number[], client: "geth" | "reth", sw: string, attempt = 1): string {
    const out = onScriptedHosts(DEV_CONFIG, ports).replace(VALIDATOR, `${VALIDATOR}          executionClient: ${client}\n          switch: ${sw}\n          switchAttempt: ${attempt}\n`);
    assert.notEqual(out.indexOf("switchAttempt"), -1);
    return out;
}

const migrate = (from = 0, to = SWITCH_STEPS.length) => SWITCH_STEPS.slice(from, to).map((s) => `migrate ${s}`);

describe("the switch's progress in Pulumi's state (real engine, scripted host)", { timeout: 15 * 60_000 }, () => {
    const lab = new ScriptedHosts();
    let project: ScratchProject;
    let ports: number[] = [];
    const hostDir = lab.dir;

    before(async () => {
        ({ project, ports } = await lab.start("switchstate", (p) => config(p, "reth", "migrate")));
    });
    after(() => lab.dispose());

    const failOn = (...lines: string[]) => fs.writeFileSync(path.join(hostDir, "fail"), lines.map((l) => `${l}\n`).join(""));
    /** The validator tool's switch and health commands the host ran since the last call, in order. */
    function ran(): string[] {
        const file = path.join(hostDir, "log");
        const lines = fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean) : [];
        fs.rmSync(file, { force: true });
        return lines
            .map((l) => (JSON.parse(l) as { line: string }).line)
            .map((l) => / (migrate \S+|rollback|cleanup|health|handover)(?: [0-9a-f]+)?$/.exec(l)?.[1])
            .filter((c): c is string => c !== undefined);
    }
    function up(yaml: string) {
        project.writeConfig(yaml);
        return project.pulumi(["up", "--stack", project.stack, "--yes", "--skip-preview", "--non-interactive", "--color", "never"]);
    }
    /** What a preview would do: every resource whose step changes something, as `op name`, in the engine's order. */
    function planned(yaml: string): string[] {
        project.writeConfig(yaml);
        const r = project.pulumi(["preview", "--stack", project.stack, "--non-interactive", "--json"]);
        assert.equal(r.status, 0, r.output.slice(-4000));
        const steps = (JSON.parse(r.stdout) as { steps: { op: string; urn: string }[] }).steps;
        // `read`: the program reads its own stack's outputs (validatorHosts) on every run; it changes nothing.
        return steps.filter((s) => s.op !== "same" && s.op !== "read").map((s) => `${s.op} ${s.urn.split("::").pop()}`);
    }
    const v = (what: string) => `fleet-validator-1-${what}`;

    it("a step that fails records nothing: the preview lists exactly the steps left, in order, and the next up resumes there", () => {
        // The fleet first, on geth and with no switch set: once a step fails the engine starts no
        // other, so a first up that fails would leave whichever steps of the other nodes were
        // still waiting then (how many depends on the machine's load).
        const fleet = up(onScriptedHosts(DEV_CONFIG, ports));
        assert.equal(fleet.status, 0, fleet.output.slice(-4000));
        // The whole dev fleet was just created on the two hosts. The command provider closes each
        // step's SSH connection when the step ends (the lab's patch: docs/toolchain.md); without it
        // every step's connection stayed open to the end of the run (15 and 19 here, measured).
        // Two at once on dev-1: its storage and sequencer chains run side by side.
        const conns = lab.connections();
        console.log(`# SSH connections open at once per scripted host during the fleet's up: ${JSON.stringify([...conns])}`);
        assert.deepEqual([...conns.keys()].sort(), [...ports].sort(), "both hosts were reached");
        // On stock Pulumi (NODEFLEET_TEST_TOOLCHAIN=stock) that difference is asserted the other way.
        for (const [port, c] of conns) assert.ok(ON_STOCK ? c.peak > 2 : c.peak <= 2, `port ${port}: ${c.peak} SSH connections open at once`);
        // The host bundles reached each host once, over SFTP, into the SSH user's home: each file
        // named by its sha256, all the three roles' tools between the two hosts, and the scripts
        // of the large steps (releases, configure), which ran from there (the scripted host runs a
        // runner's file as sh would: test/support/scripted-hosts.ts).
        const copied = new Set<string>();
        for (const port of ports) {
            const dir = path.join(lab.dir, "homes", String(port), HOST_TOOLS_DIR);
            for (const f of fs.readdirSync(dir)) {
                assert.equal(crypto.createHash("sha256").update(fs.readFileSync(path.join(dir, f))).digest("hex"), f, `${port}: ${f}`);
                copied.add(f);
            }
        }
        const tools = new Set((["storage", "sequencer", "validator"] as const).flatMap((r) => roleTools(r).map((t) => t.digest)));
        for (const t of tools) assert.ok(copied.has(t), `tool ${t} copied`);
        const scripts = [...copied].filter((f) => !tools.has(f)).map((f) => ports.map((p) => path.join(lab.dir, "homes", String(p), HOST_TOOLS_DIR, f)).find((p) => fs.existsSync(p))!);
        const kinds = scripts.map((f) => /^# nodefleet(?:: | )(configure|release install) /m.exec(fs.readFileSync(f, "utf8"))?.[1]);
        assert.equal(kinds.filter((w) => w === "configure").length, 3, "the three nodes' configure scripts");
        assert.ok(kinds.filter((w) => w === "release install").length >= 3, "the releases' install scripts");
        assert.deepEqual(ran().filter((c) => c !== "health"), [], "with no switch set, the fleet's up runs none of the switch's steps");

        failOn("migrate s05-export");
        const first = up(config(ports, "reth", "migrate"));
        assert.notEqual(first.status, 0, first.output.slice(-4000));
        assert.match(first.output, /scripted failure: migrate s05-export/);
        assert.deepEqual(ran(), migrate(0, 5));

        assert.deepEqual(planned(config(ports, "reth", "migrate")), [...SWITCH_STEPS.slice(4).map((s) => `create ${v(`switch-${s}`)}`), `replace ${v("health")}`]);

        failOn();
        const second = up(config(ports, "reth", "migrate"));
        assert.equal(second.status, 0, second.output.slice(-4000));
        assert.deepEqual(ran(), [...migrate(4), "health"]);
    });

    it("a finished switch previews as no change, and an up runs nothing", () => {
        assert.deepEqual(planned(config(ports, "reth", "migrate")), []);
        const r = project.pulumi(["preview", "--stack", project.stack, "--non-interactive", "--expect-no-changes", "--color", "never"]);
        assert.equal(r.status, 0, r.output.slice(-4000));
        const again = up(config(ports, "reth", "migrate"));
        assert.equal(again.status, 0, again.output.slice(-4000));
        assert.deepEqual(ran(), []);
    });

    it("rollback, a migrate that fails, then a rollback: the same mode runs again only in a new attempt", () => {
        const rb = up(config(ports, "geth", "rollback"));
        assert.equal(rb.status, 0, rb.output.slice(-4000));
        assert.deepEqual(ran(), ["rollback", "health"]);

        failOn("migrate s03-stop");
        const m = up(config(ports, "reth", "migrate", 2));
        assert.notEqual(m.status, 0);
        assert.deepEqual(ran(), migrate(0, 3));
        failOn();

        // The failed up never deleted attempt 1's rollback: in attempt 1 it counts as done (the
        // preview says so: nothing to run), which is why a new attempt is the operator's to state.
        assert.deepEqual(planned(config(ports, "geth", "rollback", 1)).filter((s) => s.includes("switch-rollback")), []);
        assert.deepEqual(planned(config(ports, "geth", "rollback", 2)).filter((s) => s.includes("switch-rollback")), [`replace ${v("switch-rollback")}`]);
        const again = up(config(ports, "geth", "rollback", 2));
        assert.equal(again.status, 0, again.output.slice(-4000));
        assert.deepEqual(ran(), ["rollback", "health"]);
    });

    it("a change whose read-only health step failed is undone by setting it back (its configure step runs again); after a failed configure step it would not be", () => {
        // Why a node that does not run after its restart fails the health step and not the
        // configure step (templates/health/health-step.sh.hbs): the engine records nothing of a step
        // that fails, so a set-back looks like no change to the step that failed.
        const before = config(ports, "geth", "rollback", 2); // as the test before left the stack
        const changed = before.replace("networkEnrAddress: 10.77.0.11", "networkEnrAddress: 10.77.0.99");
        assert.notEqual(changed, before);
        const storageSteps = () => {
            const file = path.join(hostDir, "log");
            const lines = fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as { line: string; status: number }) : [];
            fs.rmSync(file, { force: true });
            return lines.map((l) => `${/^# nodefleet: (configure|the health step of) (0G )?storage node storage-1/.exec(l.line)?.[1] ?? ""} ${l.status}`).filter((l) => !l.startsWith(" "));
        };
        ran();
        failOn("zgs-health.py storage-1");
        const bad = up(changed);
        assert.notEqual(bad.status, 0, bad.output.slice(-4000));
        assert.deepEqual(storageSteps(), ["configure 0", "the health step of 1"]);
        failOn();
        assert.deepEqual(planned(before).filter((s) => s.includes("storage-1")), ["replace fleet-storage-1-configure"], "set back: configure runs again (its state holds the change), health stands as it was");
        const back = up(before);
        assert.equal(back.status, 0, back.output.slice(-4000));
        assert.deepEqual(storageSteps(), ["configure 0"]);

        // The other way: the configure step fails on the change. Set back, nothing is planned for
        // it: a node it had restarted onto the change would stay there.
        failOn("configure 0G storage node storage-1");
        const failed = up(changed);
        assert.notEqual(failed.status, 0, failed.output.slice(-4000));
        assert.deepEqual(storageSteps(), ["configure 1"]);
        failOn();
        assert.deepEqual(planned(before).filter((s) => s.includes("storage-1")), [], "the failed configure step's change is invisible to a set-back");
    });
});

describe("a validator moving host (real engine, scripted hosts)", { timeout: 15 * 60_000 }, () => {
    // What this proves: the program sees the move (its own stack output validatorHosts, read through
    // a stack reference), the engine runs the handover on the host it leaves before anything with
    // the key on the new one, the signing state the old host reports reaches the new host's
    // settings, an unreachable old host stops the up before the new one gets the key, and the
    // override lets it go on. What the handover does on a host: hostfiles/tests (Handover).
    const lab = new ScriptedHosts();
    let project: ScratchProject;
    let ports: number[] = [];
    const hostDir = lab.dir;
    const KEY_LINE = "# nodefleet: the consensus key of 0G validator validator-1";
    const SIGNED = { height: "1200", round: 0, step: 3 };

    before(async () => {
        ({ project, ports } = await lab.start("handover", (p) => ((ports = p), on("dev-2"))));
        fs.writeFileSync(path.join(hostDir, "answer"), JSON.stringify({ "validator.json handover": JSON.stringify({ handedOver: true, signingState: SIGNED }) }));
    });
    after(() => lab.dispose());

    /** Pulumi.dev.yaml at the scripted hosts, validator-1 on `host`. */
    function on(hostName: "dev-1" | "dev-2", extra = ""): string {
        const yaml = onScriptedHosts(DEV_CONFIG, ports);
        const out = yaml.replace("        role: validator\n        host: dev-2\n", `        role: validator\n        host: ${hostName}\n`).replace(VALIDATOR, VALIDATOR + extra);
        assert.ok(out.includes(`role: validator\n        host: ${hostName}\n`));
        return out;
    }
    /** Each command the hosts ran since the last call: where (dev-1, dev-2), what, and the script's file. */
    function ran(): { host: string; line: string; script: string }[] {
        const file = path.join(hostDir, "log");
        const lines = fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean) : [];
        fs.rmSync(file, { force: true });
        return lines.map((l) => JSON.parse(l) as { port: number; line: string; script: string }).map((e) => ({ host: e.port === ports[0] ? "dev-1" : "dev-2", line: e.line, script: e.script }));
    }
    function up(yaml: string) {
        project.writeConfig(yaml);
        return project.pulumi(["up", "--stack", project.stack, "--yes", "--skip-preview", "--non-interactive", "--color", "never"]);
    }
    const where = (log: ReturnType<typeof ran>, f: (e: { host: string; line: string }) => boolean) => log.findIndex(f);

    it("the first up records where the validator runs", () => {
        const r = up(on("dev-2"));
        assert.equal(r.status, 0, r.output.slice(-4000));
        const out = project.pulumi(["stack", "output", "validatorHosts", "--json", "--stack", project.stack]);
        assert.deepEqual(JSON.parse(out.stdout), { "validator-1": "dev-2" });
        assert.ok(ran().some((e) => e.host === "dev-2" && e.line.startsWith(KEY_LINE)));
    });

    it("moved to dev-1: handed over on dev-2 before the key reaches dev-1, with dev-2's signing state carried into setup", () => {
        const r = up(on("dev-1"));
        assert.equal(r.status, 0, r.output.slice(-4000));
        assert.match(r.output, /validator-1: moves from host dev-2 to dev-1: the handover on dev-2 stops and disables its 0gchaind/);
        const log = ran();
        const handover = where(log, (e) => e.host === "dev-2" && / handover$/.test(e.line));
        const key = where(log, (e) => e.host === "dev-1" && e.line.startsWith(KEY_LINE));
        const configure = log.find((e) => e.host === "dev-1" && / setup$/.test(e.line));
        assert.ok(handover >= 0 && key > handover, JSON.stringify(log.map((e) => `${e.host} ${e.line}`), null, 1));
        assert.ok(configure, "setup ran on dev-1");
        assert.match(fs.readFileSync(configure.script, "utf8"), /"carriedSigningState": \{\n\s+"height": "1200",\n\s+"round": 0,\n\s+"step": 3\n\s+\}/);
        const out = project.pulumi(["stack", "output", "validatorHosts", "--json", "--stack", project.stack]);
        assert.deepEqual(JSON.parse(out.stdout), { "validator-1": "dev-1" });
        // The next up hands nothing over again.
        const again = up(on("dev-1"));
        assert.equal(again.status, 0, again.output.slice(-4000));
        assert.ok(!ran().some((e) => / handover$/.test(e.line)));
    });

    it("moving back while dev-1 cannot be reached stops before dev-2 gets the key; the override lets it go on", () => {
        fs.writeFileSync(path.join(hostDir, "fail"), "validator.json handover\n");
        const r = up(on("dev-2"));
        assert.notEqual(r.status, 0);
        assert.match(r.output, /if dev-1 cannot be reached this up stops there, before anything starts on dev-2 \(if dev-1 is gone for good: validator\.abandonHost: dev-1\)/);
        const log = ran();
        assert.ok(log.some((e) => e.host === "dev-1" && / handover$/.test(e.line)));
        assert.ok(!log.some((e) => e.host === "dev-2" && (e.line.startsWith(KEY_LINE) || / setup$/.test(e.line))), "nothing with the key on dev-2");
        const forced = up(on("dev-2", "          abandonHost: dev-1\n"));
        assert.equal(forced.status, 0, forced.output.slice(-4000));
        assert.match(forced.output, /moves from host dev-1 to dev-2 with validator\.abandonHost: dev-1: nothing is stopped on dev-1/);
        const after = ran();
        assert.ok(!after.some((e) => / handover$/.test(e.line)));
        assert.ok(after.some((e) => e.host === "dev-2" && e.line.startsWith(KEY_LINE)));
        fs.rmSync(path.join(hostDir, "fail"));
    });
});
