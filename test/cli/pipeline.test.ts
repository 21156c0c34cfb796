// Real-CLI tier: the GitOps pipeline end to end, as the workflows run it, on a state backend that
// several runners would share: an S3 bucket (moto's S3 server on loopback, lab/s3.sh) as Pulumi's
// DIY backend. The pipeline's own scripts, in the workflows' order: `scripts/ci/stack.sh preview`
// (policy pack) → `up` → `drift` → `scripts/promote.mjs` → `preview` of the next stack; then two
// `up`s started at once on one stack. The stacks' hosts are the scripted SSH host
// (lab/sim/scripted-host: real SSH, runs nothing), so `up` runs every remote step without a VM.
// The scripted host answers the drift check (hostfiles/drift.py, sent on refresh) as this test
// says: what the check reads on a real host (files, units, nftables, releases) is shown on the
// dev VMs (test/e2e/dev-stack.test.ts). Not shown: an AWS/Hetzner stack's up (no cloud here).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { ON_STOCK, ROOT, ScratchProject, toolEnv, type Run } from "../support/cli";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { until } from "../support/process";
import { validatorKeyJson } from "../support/fixtures";
import { addressOfPrivateKey } from "../../components/values/validators";
import { ScriptedHosts, onScriptedHosts } from "../support/scripted-hosts";
import { s3Server, type S3Server } from "../support/s3";

const DEV_CONFIG = fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
const BUCKET = "nodefleet-state";
const SOURCES = ["Pulumi.yaml", "package.json", "package-lock.json", "tsconfig.json", "index.ts", "components", "templates", "hostfiles", "policy", "status", "scripts", "lab"];

/** The dev config with both hosts at the scripted host's ports. */
function stackConfig(ports: readonly number[]): string {
    const out = onScriptedHosts(DEV_CONFIG, ports);
    assert.notEqual(out, DEV_CONFIG);
    return out;
}

describe("the pipeline on an S3 backend: preview, up, drift, promote, preview; two ups at once; a fleet in two shards", { timeout: 30 * 60_000 }, () => {
    const lab = new ScriptedHosts();
    /** The two shards' hosts: each its own scripted hosts, so each answers its own drift. */
    const shardLabs = { "shard-a": new ScriptedHosts(), "shard-b": new ScriptedHosts() };
    let s3: S3Server | undefined;
    let project: ScratchProject;
    let endpoint = "";
    let env: NodeJS.ProcessEnv;

    before(async () => {
        // stack.sh sources scripts/setup.sh, which runs `npm ci` unless node_modules carries the
        // stamp of this package-lock.json; the scratch project's node_modules is a link to the
        // checkout's, which that npm ci would empty. The test command's setup writes the stamp.
        const stamp = path.join(ROOT, "node_modules/.nodefleet-lock.sha256");
        const lock = createHash("sha256").update(fs.readFileSync(path.join(ROOT, "package-lock.json"))).digest("hex");
        assert.ok(fs.existsSync(stamp) && fs.readFileSync(stamp, "utf8").trim() === lock, "run scripts/setup.sh (or the test command) first: node_modules is not the one package-lock.json pins");
        s3 = await s3Server();
        endpoint = s3.endpoint;
        // The bucket, as an operator creates it once for the stacks' state.
        const backendUrl = await s3.bucket(BUCKET);

        let ports: number[];
        ({ project, ports } = await lab.start("ci-a", stackConfig, SOURCES));
        lab.answerDrift();
        fs.writeFileSync(path.join(project.dir, "Pulumi.ci-b.yaml"), stackConfig(ports));
        env = toolEnv({
            PULUMI_HOME: path.join(project.dir, ".pulumi-home"),
            // The backend as the workflows' PULUMI_BACKEND_URL secret names it: a bucket, here with
            // the endpoint of the local server (path-style addressing, plain HTTP on loopback).
            PULUMI_BACKEND_URL: backendUrl,
            AWS_ACCESS_KEY_ID: "nodefleet-test",
            AWS_SECRET_ACCESS_KEY: "nodefleet-test",
            AWS_REGION: "us-east-1",
            PULUMI_CONFIG_PASSPHRASE: "nodefleet-dev",
            NODEFLEET_UPSTREAM: path.resolve(ROOT, "../shared/upstream"),
        });
    });
    after(() => {
        s3?.server.kill();
        lab.dispose();
        for (const l of Object.values(shardLabs)) l.dispose();
    });

    /** The first line of each script the hosts ran since the last call. */
    function ran(): string[] {
        const file = path.join(lab.dir, "log");
        const lines = fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean) : [];
        fs.rmSync(file, { force: true });
        return lines.map((l) => (JSON.parse(l) as { line: string }).line);
    }

    /** A pipeline script in the scratch project, as a workflow step runs it (`input` on its stdin). */
    function step(args: string[], input?: string): Run {
        const r = spawnSync("bash", args, { cwd: project.dir, env, encoding: "utf8", timeout: 600_000, ...(input === undefined ? {} : { input }) });
        return { status: r.status, output: `${r.stdout ?? ""}${r.stderr ?? ""}`, stdout: r.stdout ?? "" };
    }

    function start(args: string[]): Promise<Run> {
        return new Promise((resolve) => {
            const child = spawn("bash", args, { cwd: project.dir, env });
            let out = "";
            child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
            child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
            child.on("close", (status) => resolve({ status, output: out, stdout: "" }));
        });
    }

    /** The keys of the bucket under a prefix (S3 ListObjectsV2). */
    async function keys(prefix: string): Promise<string[]> {
        const xml = await (await fetch(`${endpoint}/${BUCKET}?list-type=2&prefix=${encodeURIComponent(prefix)}`)).text();
        return [...xml.matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1]!);
    }

    /** The stack's resources in the bucket's state: their URNs, and any pending operation. */
    function exported(stack: string): { urns: string[]; pending: unknown[] } {
        const r = step(["-c", `pulumi stack export --stack ${stack}`]);
        assert.equal(r.status, 0, r.output);
        const d = (JSON.parse(r.stdout) as { deployment: { resources?: { urn: string }[]; pending_operations?: unknown[] } }).deployment;
        return { urns: (d.resources ?? []).map((x) => x.urn).sort(), pending: d.pending_operations ?? [] };
    }
    let afterUp: string[] = [];

    it("previews with the policy pack, brings the stack up, and finds no drift right after that up", async () => {
        const preview = step(["scripts/ci/stack.sh", "preview", "ci-a"]);
        assert.equal(preview.status, 0, preview.output.slice(-5000));
        assert.match(fs.readFileSync(path.join(project.dir, ".state/ci/preview-ci-a.txt"), "utf8"), /\+ 42 to create/);
        const up = step(["scripts/ci/stack.sh", "up", "ci-a"]);
        assert.equal(up.status, 0, up.output.slice(-5000));
        // The state is in the bucket, not on this machine.
        assert.ok((await keys(".pulumi/stacks/")).some((x) => /\/ci-a\.json$/.test(x)));
        afterUp = exported("ci-a").urns;
        assert.ok(afterUp.filter((u) => u.includes("command:remote:Command")).length >= 20, afterUp.join("\n"));
        // nodefleet's command provider keeps a step's stdin and connection in its outputs only where
        // its delete command runs (lab/toolchain/patches/pulumi-resource-command/0002); stock keeps
        // them in every step's (docs/toolchain.md).
        const state = JSON.parse(step(["-c", "pulumi stack export --stack ci-a"]).stdout) as { deployment: { resources: { urn: string; type: string; inputs?: Record<string, unknown>; outputs?: Record<string, unknown> }[] } };
        const commands = state.deployment.resources.filter((x) => x.type === "command:remote:Command");
        const outputsOf = (suffix: string) => commands.filter((x) => x.urn.endsWith(suffix)).map((x) => Object.keys(x.outputs ?? {}));
        for (const suffix of ["-preflight", "-firewall-apply", "-validator-key", "-miner-key"]) {
            assert.ok(outputsOf(suffix).length > 0, suffix);
            for (const keys of outputsOf(suffix)) assert.ok(ON_STOCK === (keys.includes("stdin") && keys.includes("connection")) && keys.includes("stdout"), `${suffix}: ${keys.join(",")}`);
        }
        for (const keys of outputsOf("-firewall-teardown")) assert.ok(["stdin", "connection", "delete"].every((k) => keys.includes(k)), keys.join(","));
        for (const x of commands) assert.ok(x.inputs?.connection !== undefined && x.inputs?.stdin !== undefined, x.urn);
        // The policy pack still reads those steps' scripts (from the inputs the engine shows it):
        // under prod's rules the preflight's hardwareCheck (warn) and the unpinned host keys are
        // found, and no script is reported unread.
        const prod = step(["-c", `pulumi preview --stack ci-a --non-interactive --policy-pack ${project.dir}/policy --policy-pack-config ${project.dir}/policy/config/prod.json`]);
        assert.notEqual(prod.status, 0, prod.output.slice(-5000));
        assert.match(prod.output, /hardwareCheck is warn/);
        assert.match(prod.output, /\[mandatory\]\s+unpinned-host-key\s/);
        assert.doesNotMatch(prod.output, /scripts-unread|is not in what the engine showed/);
        // This up created the stack's outputs; the program reads its own previous outputs
        // (validatorHosts) through a stack reference, which a refresh reads again: the drift check
        // must not call that drift.
        const drift = step(["scripts/ci/stack.sh", "drift", "ci-a"]);
        assert.equal(drift.status, 0, drift.output.slice(-5000));
    });

    it("a host that drifted fails the drift check, each difference named; the next up runs that group's steps again, and the check passes", () => {
        ran();
        lab.answerDrift([
            { group: "storage-1.configure", item: "/data/storage-1/run/config.toml", change: "content changed" },
            { group: "storage-1.configure", item: "unit zgs-storage-1.service", change: "not running (inactive)" },
        ]);
        const drift = step(["scripts/ci/stack.sh", "drift", "ci-a"]);
        assert.notEqual(drift.status, 0, drift.output.slice(-5000));
        for (const host of ["dev-1", "dev-2"]) {
            assert.match(drift.output, new RegExp(`::error title=drift on ci-a::host ${host}: /data/storage-1/run/config\\.toml: content changed \\[storage-1\\.configure\\]`));
            assert.match(drift.output, new RegExp(`::error title=drift on ci-a::host ${host}: unit zgs-storage-1\\.service: not running \\(inactive\\) \\[storage-1\\.configure\\]`));
        }
        assert.match(drift.output, /pulumi up --refresh \(scripts\/ci\/stack\.sh up ci-a\) puts the hosts back/);
        assert.ok(ran().every((l) => l.startsWith("# nodefleet: the drift check")), "the check only reads");
        // The up reads the hosts first (--refresh): storage-1's configure runs again, nothing else.
        const repair = step(["scripts/ci/stack.sh", "up", "ci-a"]);
        assert.equal(repair.status, 0, repair.output.slice(-5000));
        const steps = ran().filter((l) => !l.startsWith("# nodefleet: the drift check"));
        assert.deepEqual(steps.map((l) => l.replace(/ on host .*/, "")), ["# nodefleet: configure 0G storage node storage-1"], steps.join("\n"));
        lab.answerDrift();
        const clean = step(["scripts/ci/stack.sh", "drift", "ci-a"]);
        assert.equal(clean.status, 0, clean.output.slice(-5000));
    });

    it("promotes a release to the next stack as a change to its file alone (what the release is, into the stack's own mirror), and previews that stack", () => {
        const file = path.join(project.dir, "Pulumi.ci-b.yaml");
        const before = fs.readFileSync(file, "utf8");
        const lab = "        url: http://10.0.2.2:8700/zgs_node-v1.1.0.tar.gz\n        sha256File: .state/artifacts/current/SHA256SUMS\n        version: v1.1.0\n";
        assert.ok(before.includes(lab), "ci-b's zgs release as the dev config gives it");
        // ci-b fetches releases from a mirror of its own, and runs an older zgs.
        const mirrored = before.replace(lab, `        file: zgs_node-v1.0.0.tar.gz\n        sha256: "${"1".repeat(64)}"\n        version: v1.0.0\n`).replace("    releases:\n", "    releaseMirror: https://releases.example.org/nodefleet/\n    releases:\n");
        fs.writeFileSync(file, mirrored);
        const promote = step(["-c", "node scripts/promote.mjs ci-a ci-b zgs"]);
        assert.equal(promote.status, 0, promote.output);
        const after = fs.readFileSync(file, "utf8");
        const zgs = after.slice(after.indexOf("      zgs:\n"), after.indexOf("      aztec:\n"));
        assert.match(zgs, /file: zgs_node-v1\.1\.0\.tar\.gz/);
        assert.match(zgs, /version: v1\.1\.0/);
        assert.match(zgs, /sha256: "?2{64}"?/, "the digest resolved inline from ci-a's SHA256SUMS");
        assert.doesNotMatch(zgs, /10\.0\.2\.2/, "no address of ci-a's");
        assert.equal(after.split("\n").length, mirrored.split("\n").length, "three values changed in place");
        const preview = step(["scripts/ci/stack.sh", "preview", "ci-b"]);
        assert.equal(preview.status, 0, preview.output.slice(-5000));
        assert.match(preview.output, /\+ 42 to create/);
    });

    it("lets one of two ups at once run, refuses the other by the backend's lock, and keeps the state whole", async () => {
        const first = start(["scripts/ci/stack.sh", "up", "ci-a"]);
        // The second starts once the first holds the stack's lock in the bucket.
        await until("the first up's lock", 300, async () => ((await keys(".pulumi/locks/")).length > 0 ? true : undefined));
        const second = step(["scripts/ci/stack.sh", "up", "ci-a"]);
        const firstRun = await first;
        assert.equal(firstRun.status, 0, firstRun.output.slice(-5000));
        assert.notEqual(second.status, 0, second.output.slice(-3000));
        assert.match(second.output, /the stack is currently locked by 1 lock\(s\)/);
        assert.deepEqual(await keys(".pulumi/locks/"), [], "the lock is released");
        // Whole: the same resources as after the first up, no operation left pending, and the next check passes.
        const state = exported("ci-a");
        assert.deepEqual(state.urns, afterUp);
        assert.deepEqual(state.pending, []);
        const drift = step(["scripts/ci/stack.sh", "drift", "ci-a"]);
        assert.equal(drift.status, 0, drift.output.slice(-5000));
    });
    // A fleet split into two shards, each its own stack on the same backend: shard-a the dev fleet,
    // shard-b the same roles under other names and keys, each on scripted hosts of its own.
    const SHARDS = ["shard-a", "shard-b"];
    /** What a failed run said: its error lines first, then its end. */
    const errorsOf = (r: Run) => `${r.output.split("\n").filter((l) => /error|refused|failed/i.test(l)).join("\n")}\n...\n${r.output.slice(-3000)}`;
    /** The dev config as a shard's: its hosts at `ports`, the fleet edited by `edit`. */
    function shardConfig(ports: readonly number[], edit: (fleet: any) => void): string {
        const doc = parseYaml(stackConfig(ports)) as { config: Record<string, any> };
        const fleet = doc.config["nodefleet:fleet"];
        fleet.shards = SHARDS;
        edit(fleet);
        return stringifyYaml(doc);
    }
    const SHARD_B_SEQUENCER_KEY = `0x${"5b".repeat(32)}`;
    /** shard-b: storage-2, sequencer-2 and validator-2, with keys of their own. */
    const shardB = (fleet: any) => {
        for (const n of fleet.nodes) n.name = n.name.replace(/-1$/, "-2");
        const seq = fleet.nodes.find((n: any) => n.role === "sequencer").sequencer;
        seq.validatorPrivateKeySecret = "shardSequencerKey";
        seq.validatorAddress = addressOfPrivateKey(SHARD_B_SEQUENCER_KEY);
        fleet.nodes.find((n: any) => n.role === "validator").validator.validatorKeySecret = "shardValidatorKey";
    };
    const shardPorts: Record<string, number[]> = {};
    /** Writes a shard's stack file; the secrets set on it since (config set) are kept. */
    function writeShard(stack: string, edit: (fleet: any) => void): void {
        const file = path.join(project.dir, `Pulumi.${stack}.yaml`);
        const doc = parseYaml(shardConfig(shardPorts[stack]!, edit)) as { config: Record<string, unknown> };
        const old = fs.existsSync(file) ? (parseYaml(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> }).config ?? {} : {};
        for (const [k, v] of Object.entries(old)) if (!(k in doc.config)) doc.config[k] = v;
        fs.writeFileSync(file, stringifyYaml(doc));
    }
    function signingKeysOf(stack: string): Record<string, string> {
        const r = step(["-c", `pulumi stack output signingKeys --stack ${stack} --json`]);
        assert.equal(r.status, 0, r.output);
        return JSON.parse(r.stdout) as Record<string, string>;
    }

    it("two shards: previewed and brought up side by side, each its own stack; each shard's drift named for it alone", async () => {
        for (const [stack, l] of Object.entries(shardLabs)) {
            shardPorts[stack] = await l.listen(stack === "shard-b" ? 3 : 2);
            l.answerDrift();
        }
        writeShard("shard-a", () => undefined);
        writeShard("shard-b", shardB);
        // shard-b's own keys, as an operator sets them (the value on stdin).
        for (const [key, value] of [["shardSequencerKey", SHARD_B_SEQUENCER_KEY], ["shardValidatorKey", validatorKeyJson("shard-b")]] as const) {
            const r = step(["-c", `pulumi stack select shard-b --create --non-interactive >/dev/null && pulumi config set --secret --stack shard-b nodefleet:${key}`], value);
            assert.equal(r.status, 0, r.output);
        }
        const previews = await Promise.all(SHARDS.map((s) => start(["scripts/ci/stack.sh", "preview", s])));
        for (const [i, p] of previews.entries()) {
            assert.equal(p.status, 0, p.output.slice(-5000));
            assert.match(fs.readFileSync(path.join(project.dir, `.state/ci/preview-${SHARDS[i]}.txt`), "utf8"), /\+ 42 to create/);
        }
        const ups = await Promise.all(SHARDS.map((s) => start(["scripts/ci/stack.sh", "up", s])));
        for (const u of ups) assert.equal(u.status, 0, u.output.slice(-5000));
        // Each shard ran its steps on its own hosts only.
        for (const [stack, l] of Object.entries(shardLabs)) {
            const lines = fs.readFileSync(path.join(l.dir, "log"), "utf8");
            const other = stack === "shard-a" ? /storage-2|validator-2|sequencer-2/ : /storage-1|validator-1|sequencer-1/;
            assert.match(lines, stack === "shard-a" ? /storage-1/ : /storage-2/);
            assert.doesNotMatch(lines, other, `${stack}'s hosts ran another shard's steps`);
        }
        const a = signingKeysOf("shard-a");
        const b = signingKeysOf("shard-b");
        assert.deepEqual(Object.keys(a).sort(), ["sequencer-1", "validator-1"]);
        assert.deepEqual(Object.keys(b).sort(), ["sequencer-2", "validator-2"]);
        assert.equal(b["sequencer-2"], `aztec-attester:${addressOfPrivateKey(SHARD_B_SEQUENCER_KEY).toLowerCase()}`);
        assert.ok(Object.values(a).every((k) => !Object.values(b).includes(k)));

        // A host of shard-b drifts: its drift check fails naming shard-b; shard-a's passes.
        shardLabs["shard-b"].answerDrift([{ group: "storage-2.configure", item: "/data/storage-2/run/config.toml", change: "content changed" }]);
        const [driftA, driftB] = await Promise.all(SHARDS.map((s) => start(["scripts/ci/stack.sh", "drift", s])));
        assert.equal(driftA!.status, 0, driftA!.output.slice(-5000));
        assert.doesNotMatch(driftA!.output, /::error/);
        assert.notEqual(driftB!.status, 0, driftB!.output.slice(-5000));
        assert.match(driftB!.output, /::error title=drift on shard-b::host dev-1: \/data\/storage-2\/run\/config\.toml: content changed \[storage-2\.configure\]/);
        assert.doesNotMatch(driftB!.output, /drift on shard-a/);
        shardLabs["shard-b"].answerDrift();
    });

    it("nodefleet status reads every shard at once: one report per stack", () => {
        const r = step(["-c", `node ${JSON.stringify(path.join(ROOT, "dist/status/main.js"))} status --stack shard-a --shards --json --timeout 20`]);
        // The scripted hosts answer no health check: every node is reported, none healthy.
        assert.equal(r.status, 1, r.output.slice(-3000));
        const doc = JSON.parse(r.stdout) as { healthy: boolean; stacks: { stack: string; nodes: { node: string }[] }[] };
        assert.equal(doc.healthy, false);
        assert.deepEqual(doc.stacks.map((s) => [s.stack, s.nodes.map((n) => n.node).sort()]), [
            ["shard-a", ["sequencer-1", "storage-1", "validator-1"]],
            ["shard-b", ["sequencer-2", "storage-2", "validator-2"]],
        ]);
        assert.match(r.output, /nodefleet status: stack shard-a, 2 host\(s\)/);
        assert.match(r.output, /nodefleet status: stack shard-b, 2 host\(s\)/);
    });

    it("a validator in two shards' configs is refused; moved between shards, it starts in the one it joins only after the one it leaves has stopped it", () => {
        // Both files name validator-1 (with its key): shard-b's preview refuses, naming the field.
        // validator-1 joins shard-b on a host of its own there (dev-3, its third scripted host).
        const validator1 = (fleet: any) => {
            shardB(fleet);
            fleet.hosts["dev-3"] = { ...fleet.hosts["dev-2"], port: shardPorts["shard-b"]![2] };
            const v = JSON.parse(JSON.stringify(fleet.nodes.find((n: any) => n.role === "validator")));
            v.name = "validator-1";
            v.host = "dev-3";
            v.validator.validatorKeySecret = "devValidatorKey";
            fleet.nodes.push(v);
        };
        writeShard("shard-b", validator1);
        const both = step(["scripts/ci/stack.sh", "preview", "shard-b"]);
        assert.notEqual(both.status, 0);
        assert.match(both.output, /nodes\[3\]\.name: validator-1 is also a node of shard shard-a: a validator belongs to one shard/);
        assert.match(both.output, /nodes\[3\]\.validator\.validatorKeySecret: shard shard-a's validator-1 signs with the key of the same config key/);
        // The move, in one change: shard-a drops validator-1 (and its host), shard-b takes it.
        // shard-b first: refused, shard-a's last up left the key running.
        writeShard("shard-a", (fleet: any) => {
            fleet.nodes = fleet.nodes.filter((n: any) => n.role !== "validator");
            delete fleet.hosts["dev-2"];
            delete fleet.releases["0g-chain"];
        });
        const logB = path.join(shardLabs["shard-b"].dir, "log");
        const before = fs.readFileSync(logB, "utf8").split("\n").filter(Boolean).length;
        const early = step(["scripts/ci/stack.sh", "up", "shard-b"]);
        assert.notEqual(early.status, 0);
        assert.match(early.output, /validator-1: its key \(0g-consensus:[0-9A-F]{40}\) signs in shard shard-a as validator-1, as that shard's last up left it: one key must never sign on two machines/);
        // Refused before anything is registered: shard-b's hosts were only read (the up's refresh).
        const since = fs.readFileSync(logB, "utf8").split("\n").filter(Boolean).slice(before).map((l) => (JSON.parse(l) as { line: string }).line);
        assert.ok(since.every((l) => l.startsWith("# nodefleet: the drift check")), since.join("\n"));
        const leave = step(["scripts/ci/stack.sh", "up", "shard-a"]);
        assert.equal(leave.status, 0, errorsOf(leave));
        assert.equal(signingKeysOf("shard-a")["validator-1"], undefined);
        assert.ok(!exported("shard-a").urns.some((u) => u.includes("validator-1")), "validator-1's steps (its removal ran) are gone from shard-a");
        const join = step(["scripts/ci/stack.sh", "up", "shard-b"]);
        assert.equal(join.status, 0, errorsOf(join));
        assert.match(signingKeysOf("shard-b")["validator-1"] ?? "", /^0g-consensus:[0-9A-F]{40}$/);
    });
});
