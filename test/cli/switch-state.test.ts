// Real-CLI tier: the switch's progress lives in Pulumi's state. `pulumi up` and `pulumi preview`
// with the real engine and the real command provider, over real SSH, against the scripted host
// (lab/sim/scripted-host): an SSH endpoint that runs nothing, records each step it is asked to
// run and fails the ones the test names. What this proves: a completed step is recorded and not
// run again, a failed one records nothing, a preview mid-switch lists exactly the steps left (in
// order) and a finished switch previews as no change, and a mode already recorded runs again only
// in a new attempt. What it cannot prove (the scripted host does nothing): that the steps do the
// right thing on a host; the E2E tier runs them on VMs.
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT, ScratchProject, sh } from "../support/cli";
import { SWITCH_STEPS } from "../../components/roles/switch-steps";

const DEV_CONFIG = fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
const VALIDATOR = "          validatorKeySecret: devValidatorKey\n";

/** Pulumi.dev.yaml with both hosts at the scripted host and validator-1's switch set. */
function config(ports: readonly number[], client: "geth" | "reth", sw: string, attempt = 1): string {
    const out = DEV_CONFIG.replace("port: 2201", `port: ${ports[0]}`).replace("port: 2202", `port: ${ports[1]}`).replace(VALIDATOR, `${VALIDATOR}          executionClient: ${client}\n          switch: ${sw}\n          switchAttempt: ${attempt}\n`);
    assert.notEqual(out.indexOf("switchAttempt"), -1);
    return out;
}

const migrate = (from = 0, to = SWITCH_STEPS.length) => SWITCH_STEPS.slice(from, to).map((s) => `migrate ${s}`);

describe("the switch's progress in Pulumi's state (real engine, scripted host)", { timeout: 15 * 60_000 }, () => {
    let project: ScratchProject;
    let host: ChildProcess;
    let ports: number[] = [];
    const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-scripted-host-"));

    before(async () => {
        const bin = sh("bash", [path.join(ROOT, "lab/scripted-host.sh")]).stdout.trim();
        host = spawn(bin, [hostDir, "2"], { stdio: ["ignore", "ignore", "inherit"] });
        const portFile = path.join(hostDir, "ports");
        for (let i = 0; i < 100 && !fs.existsSync(portFile); i++) await new Promise((r) => setTimeout(r, 100));
        ports = fs.readFileSync(portFile, "utf8").trim().split("\n").map(Number);
        project = new ScratchProject("switchstate", config(ports, "reth", "migrate"));
        const key = path.join(project.dir, ".state/vm/id_ed25519");
        fs.mkdirSync(path.dirname(key), { recursive: true });
        sh("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]);
        const sums = path.join(project.dir, ".state/artifacts/current/SHA256SUMS");
        fs.mkdirSync(path.dirname(sums), { recursive: true });
        fs.writeFileSync(sums, ["aristotle-v1.0.6", "zgs_node-v1.1.0", "aztec-v2.0.2"].map((n, i) => `${String(i + 1).repeat(64)}  ${n}.tar.gz\n`).join(""));
    });
    after(() => {
        host?.kill();
        project?.dispose();
        fs.rmSync(hostDir, { recursive: true, force: true });
    });

    const failOn = (...lines: string[]) => fs.writeFileSync(path.join(hostDir, "fail"), lines.map((l) => `${l}\n`).join(""));
    /** The validator tool's switch and health commands the host ran since the last call, in order. */
    function ran(): string[] {
        const file = path.join(hostDir, "log");
        const lines = fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean) : [];
        fs.rmSync(file, { force: true });
        return lines
            .map((l) => (JSON.parse(l) as { line: string }).line)
            .map((l) => / (migrate \S+|rollback|cleanup|health)(?: [0-9a-f]+)?$/.exec(l)?.[1])
            .filter((c): c is string => c !== undefined);
    }
    function up(yaml: string) {
        project.writeConfig(yaml);
        return project.pulumi(["up", "--stack", project.stack, "--yes", "--skip-preview", "--non-interactive", "--color", "never"]);
    }
    /** What a preview would do: every resource whose step is not `same`, as `op name`, in the engine's order. */
    function planned(yaml: string): string[] {
        project.writeConfig(yaml);
        const r = project.pulumi(["preview", "--stack", project.stack, "--non-interactive", "--json"]);
        assert.equal(r.status, 0, r.output.slice(-4000));
        const steps = (JSON.parse(r.stdout) as { steps: { op: string; urn: string }[] }).steps;
        return steps.filter((s) => s.op !== "same").map((s) => `${s.op} ${s.urn.split("::").pop()}`);
    }
    const v = (what: string) => `fleet-validator-1-${what}`;

    it("a step that fails records nothing: the preview lists exactly the steps left, in order, and the next up resumes there", () => {
        failOn("migrate s05-export");
        const first = up(config(ports, "reth", "migrate"));
        assert.notEqual(first.status, 0, first.output.slice(-4000));
        assert.match(first.output, /scripted failure: migrate s05-export/);
        assert.deepEqual(ran(), migrate(0, 5));

        assert.deepEqual(planned(config(ports, "reth", "migrate")), [...SWITCH_STEPS.slice(4).map((s) => `create ${v(`switch-${s}`)}`), `create ${v("health")}`]);

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
});
