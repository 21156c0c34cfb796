// The health step of storage, sequencer and validator nodes (templates/health/health-step.sh.hbs): the
// role's health report, then a failure when the node's services do not run, which the configure
// step only warns of. Why there and not in configure: a step that fails records nothing in
// Pulumi's state, so a configure step that failed after restarting a node onto a bad release would
// not run again when the release is set back (the cli tier's scripted host shows the engine's side:
// test/cli/switch-state.test.ts). The scripts run here under `sh` with systemctl, journalctl and
// python3 stand-ins; what they cannot show (a real unit in its restart loop) the VM tier does.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { parseFleet } from "../../components/config/fleet";
import type { NodeSpec } from "../../components/config/schema";
import { renderStorageHealth } from "../../components/roles/storage/node";
import { renderSequencerHealth } from "../../components/roles/sequencer/node";
import { renderValidatorHealth } from "../../components/roles/validator/node";
import { gateMarker } from "../../components/rollout/gate";
import { golden, requireTool, runTool } from "../support/golden";
import { baseFleet, secretSource } from "../support/fixtures";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-health-step-"));
const nodes = parseFleet(baseFleet(), secretSource()).spec.nodes;
const byRole = <R extends NodeSpec["role"]>(role: R) => nodes.find((n) => n.role === role) as Extract<NodeSpec, { role: R }>;

/** Each role's health step, ungated and gated (its gate marker in the script). */
const SCRIPTS = {
    storage: (gated: boolean) => renderStorageHealth(byRole("storage"), "/data", gated ? "halt" : undefined),
    sequencer: (gated: boolean) => renderSequencerHealth(byRole("sequencer"), "/data", gated),
    validator: (gated: boolean) => renderValidatorHealth(byRole("validator"), gated),
};
const UNITS = { storage: ["zgs-storage-1.service"], sequencer: ["aztec-sequencer-1.service"], validator: ["geth-validator-1.service", "0gchaind-validator-1.service"] };

/**
 * Runs `script` with stand-ins: systemctl says each unit of `down` is not active, and that each
 * unit was restarted by systemd 2 times (NRestarts; a validator's geth 4); journalctl prints a line
 * naming its unit; python3 (the health tool) prints a report (and on stderr whether the gate's
 * record of restart counts is there yet), or exits `toolExit`.
 */
function run(script: string, o: { down?: readonly string[]; marker?: string; toolExit?: number } = {}) {
    const bin = fs.mkdtempSync(path.join(tmp, "bin-"));
    const marker = o.marker ?? path.join(tmp, "no-marker");
    fs.writeFileSync(path.join(bin, "systemctl"), `#!/bin/sh\nif [ "$1 $2 $3 $4" = "show -p NRestarts --value" ]; then case "$5" in geth-*) echo 4 ;; *) echo 2 ;; esac; exit 0; fi\n[ "$1 $2" = "is-active --quiet" ] || exit 9\ncase " ${(o.down ?? []).join(" ")} " in *" $3 "*) exit 3 ;; esac\nexit 0\n`, { mode: 0o755 });
    fs.writeFileSync(path.join(bin, "journalctl"), "#!/bin/sh\necho \"journal of $2: exited at start\"\necho \"$2: cannot reach https://user:hunter2@rpc.example.com:8443/v2/SECRETKEY?token=SECRETTOKEN\"\n", { mode: 0o755 });
    fs.writeFileSync(path.join(bin, "python3"), `#!/bin/sh\necho "progress" >&2\n[ -e '${marker}.restarts' ] && echo "the restart counts recorded before the tool" >&2\nprintf '{"report": "%s"}\\n' "$*"\nexit ${o.toolExit ?? 0}\n`, { mode: 0o755 });
    const body = script.replaceAll(/\/var\/lib\/nodefleet\/gate\/[a-z0-9-]+/g, marker);
    return spawnSync("sh", ["-s"], { input: body, encoding: "utf8", env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
}

describe("health step: a node that does not run fails it, unless its rollout gate judges it", () => {
    it("match their golden copies and pass shellcheck", () => {
        requireTool("shellcheck", "shellcheck");
        for (const [role, script] of Object.entries(SCRIPTS)) {
            for (const gated of [false, true]) {
                const file = golden(`health-step/${role}${gated ? "-gated" : ""}.sh`, script(gated));
                const check = runTool("shellcheck", ["--shell=sh", "--severity=style", file]);
                assert.equal(check.status, 0, `${role}: ${check.output}`);
            }
        }
        assert.match(SCRIPTS.storage(true), new RegExp(`if \\[ -e ${gateMarker("storage-1")} \\]`));
        assert.doesNotMatch(SCRIPTS.storage(false), /\/var\/lib\/nodefleet\/gate/, "ungated: a marker left on the host from an earlier rollout changes nothing");
    });

    it("every service running: the report on stdout, exit 0", () => {
        for (const [role, script] of Object.entries(SCRIPTS)) {
            const r = run(script(false));
            assert.equal(r.status, 0, `${role}: ${r.stderr}`);
            assert.match(r.stdout, /^\{"report": ".*(zgs-health\.py storage-1 --wait 60|aztec-health\.py sequencer-1 --wait 90|zg-validator\.py \/etc\/nodefleet\/validator-1\/validator\.json health)"\}\n$/, role);
        }
    });

    it("a service down: the report, each down unit's journal, the node named, exit 1 (ungated, or gated at its first deploy)", () => {
        for (const [role, script] of Object.entries(SCRIPTS)) {
            const units = UNITS[role as keyof typeof UNITS];
            for (const gated of [false, true]) {
                const r = run(script(gated), { down: units });
                assert.equal(r.status, 1, `${role}${gated ? " gated, no marker" : ""}: ${r.stderr}`);
                assert.match(r.stdout, /^\{"report": /, "the report still printed");
                for (const unit of units) assert.match(r.stderr, new RegExp(`journal of ${unit.replace(/\./g, "\\.")}: exited at start`));
                assert.match(r.stderr, new RegExp(`${role} ${byRole(role as NodeSpec["role"]).name}: not running: ${units.join(" ").replace(/\./g, "\\.")}\\. Fix the release or setting \\(or set it back\\) and run up again`));
            }
        }
        // The journal's URLs cut to scheme://host[:port]: a path, query or user part may hold an API key.
        const r = run(SCRIPTS.storage(false), { down: UNITS.storage });
        assert.match(r.stderr, /zgs-storage-1\.service: cannot reach https:\/\/rpc\.example\.com:8443\/…\n/);
        assert.doesNotMatch(r.stderr, /hunter2|SECRETKEY|SECRETTOKEN/);
        // A validator's geth down alone names geth alone.
        const one = run(SCRIPTS.validator(false), { down: ["geth-validator-1.service"] });
        assert.equal(one.status, 1);
        assert.match(one.stderr, /validator validator-1: not running: geth-validator-1\.service\. /);
    });

    it("gated and past its first deploy (the gate's marker on the host): warned, exit 0, for the gate to judge", () => {
        const marker = path.join(tmp, "marker");
        fs.writeFileSync(marker, "");
        for (const [role, script] of Object.entries(SCRIPTS)) {
            const r = run(script(true), { down: UNITS[role as keyof typeof UNITS], marker });
            assert.equal(r.status, 0, `${role}: ${r.stderr}`);
            assert.match(r.stderr, /: warning: not running: .*: its rollout gate judges it\n$/);
            const ungated = run(script(false), { down: UNITS[role as keyof typeof UNITS], marker });
            assert.equal(ungated.status, 1, `${role}: not gated, the marker changes nothing`);
        }
    });

    it("gated and past its first deploy: its services' restart counts recorded before the health tool runs, for the gate to count a crash loop from", () => {
        const marker = path.join(tmp, "marker-counts");
        fs.writeFileSync(marker, "");
        for (const [role, script] of Object.entries(SCRIPTS)) {
            fs.rmSync(`${marker}.restarts`, { force: true });
            const t0 = Math.floor(Date.now() / 1000);
            const r = run(script(true), { marker });
            assert.equal(r.status, 0, `${role}: ${r.stderr}`);
            assert.match(r.stderr, /the restart counts recorded before the tool/, role);
            const [at, ...lines] = fs.readFileSync(`${marker}.restarts`, "utf8").trimEnd().split("\n");
            assert.ok(Number(at) >= t0 && Number(at) <= Date.now() / 1000 + 1, `${role}: written now (${at})`);
            assert.deepEqual(lines, UNITS[role as keyof typeof UNITS].map((u) => `${u} ${u.startsWith("geth-") ? 4 : 2}`), role);
            assert.ok(!fs.existsSync(`${marker}.restarts.new`), "written whole, then renamed");
        }
        // At its first deploy (no marker yet) and ungated: no record (no gate counts from it).
        const none = path.join(tmp, "no-marker-yet");
        for (const gated of [true, false]) {
            assert.equal(run(SCRIPTS.storage(gated), { marker: none }).status, 0);
            assert.ok(!fs.existsSync(`${none}.restarts`), `${gated ? "gated, first deploy" : "ungated"}: nothing recorded`);
        }
        fs.rmSync(`${marker}.restarts`, { force: true });
        assert.equal(run(SCRIPTS.storage(false), { marker }).status, 0);
        assert.ok(!fs.existsSync(`${marker}.restarts`), "ungated, a marker left from an earlier rollout: nothing recorded");
    });

    it("a health tool that fails fails the step with its exit code", () => {
        for (const script of Object.values(SCRIPTS)) assert.equal(run(script(false), { toolExit: 2 }).status, 2);
    });

    it("the validator's names the execution client its config runs: reth after a migrate", () => {
        const f = baseFleet();
        const v = f.nodes.find((n: any) => n.role === "validator");
        Object.assign(v.validator, { executionClient: "reth" });
        const spec = parseFleet(f, secretSource()).spec.nodes.find((n) => n.role === "validator") as Extract<NodeSpec, { role: "validator" }>;
        const r = run(renderValidatorHealth(spec, false), { down: ["reth-validator-1.service"] });
        assert.equal(r.status, 1);
        assert.match(r.stderr, /not running: reth-validator-1\.service\. /);
        assert.equal(run(renderValidatorHealth(spec, false), { down: ["geth-validator-1.service"] }).status, 0, "geth, stopped by the switch, is not asked for");
    });
});
