// A fleet defined in a file of the project (nodefleet:fleetFile) with its keys in a secrets
// directory (secretsDir): read the same way by the program, status, the shards' checks and
// promotion (components/config/definition.ts, secret-files.ts). What this cannot prove: that
// Pulumi itself runs a stack whose inline config is too large, or not; test/cli/scale.test.ts
// runs the real engine on one of each.
import { afterEach, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parse, stringify } from "yaml";
import { fleetFileReason, FleetDefinitionError, fleetOfStackFile, readFleetDefinition, type ConfigLookup } from "../../components/config/definition";
import { loadStack } from "../../components/config/load";
import { shardConfigConflicts } from "../../components/fleet/shards";
import { fleetSpec } from "../../components/config/schema";
import { planFromConfig } from "../../status/targets";
import { configValues, fleetNodes, STOCK_STACK_NODES, stockSizeWarning } from "../../status/check";
import { baseFleet, SECRETS } from "../support/fixtures";
import { installMocks } from "../support/mocks";
import { ROOT } from "../support/cli";

const dirs: string[] = [];
function tmp(prefix: string, mode = 0o700): string {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    fs.chmodSync(d, mode);
    dirs.push(d);
    return d;
}
afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A project holding `fleet` in fleets/main.yaml. */
function projectWith(fleet: unknown): string {
    const dir = tmp("nodefleet-project-");
    fs.mkdirSync(path.join(dir, "fleets"));
    fs.writeFileSync(path.join(dir, "fleets/main.yaml"), stringify(fleet));
    return dir;
}

/** A secrets directory holding `secrets`, one file each (mode 600, or `mode`). */
function secretsDir(secrets: Record<string, string>, mode = 0o600): string {
    const dir = tmp("nodefleet-secrets-");
    for (const [k, v] of Object.entries(secrets)) fs.writeFileSync(path.join(dir, k), `${v}\n`, { mode });
    return dir;
}

const lookup = (values: Record<string, string>, secret: readonly string[] = []): ConfigLookup => (key) => (values[key] === undefined ? undefined : { value: values[key]!, secret: secret.includes(key) });

/** The program's reading of a stack config (values by key, `secrets` encrypted) in `projectDir`. */
function load(config: Record<string, string>, secretKeys: readonly string[], projectDir: string) {
    installMocks();
    pulumi.runtime.setAllConfig(Object.fromEntries(Object.entries(config).map(([k, v]) => [`nodefleet:${k}`, v])), secretKeys.map((k) => `nodefleet:${k}`));
    return loadStack(undefined, projectDir);
}

describe("the fleet's definition: inline or in a file of the project", () => {
    it("reads the file nodefleet:fleetFile names, as YAML (JSON is YAML), and plans what the same fleet inline plans", () => {
        const dir = projectWith(baseFleet());
        const fromFile = load({ fleetFile: "fleets/main.yaml", ...SECRETS }, Object.keys(SECRETS), dir);
        const inline = load({ fleet: JSON.stringify(baseFleet()), ...SECRETS }, Object.keys(SECRETS), dir);
        assert.deepEqual(fromFile.plan.spec, inline.plan.spec);
        assert.deepEqual(fromFile.plan.hosts.map((h) => h.name), inline.plan.hosts.map((h) => h.name));
        fs.writeFileSync(path.join(dir, "fleets/main.yaml"), JSON.stringify(baseFleet()));
        assert.deepEqual(load({ fleetFile: "fleets/main.yaml", ...SECRETS }, Object.keys(SECRETS), dir).plan.spec, inline.plan.spec);
    });

    it("refuses, naming the key and the reason: both set, neither, a path outside the project, an absent file, bad YAML (without its text), a non-map", () => {
        const dir = projectWith(baseFleet());
        const refused = (values: Record<string, string>, re: RegExp, secret: string[] = []) =>
            assert.throws(() => readFleetDefinition(lookup(values, secret), dir), (e: unknown) => e instanceof FleetDefinitionError && re.test((e as Error).message));
        refused({ fleet: "{}", fleetFile: "fleets/main.yaml" }, /nodefleet:fleet and nodefleet:fleetFile are both set/);
        refused({}, /nodefleet:fleet: missing \(or nodefleet:fleetFile/);
        refused({ fleetFile: "fleets/main.yaml" }, /nodefleet:fleetFile: stored encrypted/, ["fleetFile"]);
        refused({ fleet: "{" }, /nodefleet:fleet: not a structured value/);
        refused({ fleetFile: "/etc/passwd.yaml" }, /nodefleet:fleetFile: an absolute path/);
        refused({ fleetFile: "~/fleet.yaml" }, /nodefleet:fleetFile: an absolute path/);
        refused({ fleetFile: "fleets/../../x.yaml" }, /nodefleet:fleetFile: outside the project/);
        refused({ fleetFile: "fleets/main.txt" }, /not a \.yaml, \.yml or \.json file/);
        refused({ fleetFile: "fleets/none.yaml" }, /nodefleet:fleetFile: fleets\/none\.yaml: no such file in the project/);
        fs.mkdirSync(path.join(dir, "fleets/dir.yaml"));
        refused({ fleetFile: "fleets/dir.yaml" }, /fleets\/dir\.yaml is not a regular file/);
        fs.writeFileSync(path.join(dir, "fleets/bad.yaml"), "hosts:\n  a: 1\n  a: 2\nnodes: [\n  leaked-value-xyz\n");
        assert.throws(() => readFleetDefinition(lookup({ fleetFile: "fleets/bad.yaml" }), dir), (e: unknown) => /^fleets\/bad\.yaml: not valid YAML at line \d+, column \d+ \([A-Z_]+\)$/.test((e as Error).message) && !(e as Error).message.includes("leaked-value-xyz"));
        fs.writeFileSync(path.join(dir, "fleets/list.yaml"), "- a\n");
        refused({ fleetFile: "fleets/list.yaml" }, /fleets\/list\.yaml: holds no fleet/);
        assert.equal(fleetFileReason("fleets/prod/eu.yml"), undefined);
    });

    it("a fleet file's problems are told as the file's, by path", () => {
        const f = baseFleet();
        f.nodes[0].host = "nowhere";
        const dir = projectWith(f);
        assert.throws(() => load({ fleetFile: "fleets/main.yaml", ...SECRETS }, Object.keys(SECRETS), dir), (e: unknown) => e instanceof pulumi.RunError && /^invalid fleet definition fleets\/main\.yaml:\n {2}- nodes\[0\]\.host/.test((e as Error).message));
    });
});

describe("a fleet's secrets in a directory (secretsDir)", () => {
    it("a secret the fleet names is a config key or a file of secretsDir: the plan is the same, and the program gets it as a secret Output", async () => {
        const { validatorKey, ...inConfig } = SECRETS;
        const dir = secretsDir({ validatorKey: validatorKey! });
        const project = projectWith({ ...baseFleet(), secretsDir: dir });
        const stack = load({ fleetFile: "fleets/main.yaml", ...inConfig }, Object.keys(inConfig), project);
        assert.equal(stack.plan.secrets.get("validatorKey"), validatorKey);
        const out = stack.secret("validatorKey");
        assert.equal(await pulumi.isSecret(out), true);
        assert.equal(await new Promise((r) => out.apply(r)), validatorKey);
    });

    it("refuses, never quoting a value: a file others can read, a directory others can open, one inside the project, a name set twice, a name set nowhere", () => {
        const { validatorKey, ...inConfig } = SECRETS;
        const attempt = (secrets: string, config: Record<string, string>, project = projectWith({ ...baseFleet(), secretsDir: secrets })) => {
            try {
                load({ fleetFile: "fleets/main.yaml", ...config }, Object.keys(config), project);
            } catch (e) {
                assert.ok(!(e as Error).message.includes(validatorKey!.slice(20, 60)), "no value in the message");
                return (e as Error).message;
            }
            return "";
        };
        assert.match(attempt(secretsDir({ validatorKey: validatorKey! }, 0o644), inConfig), /nodes\[2\]\.validator\.validatorKeySecret: the secret it names: .*\/validatorKey: readable by group or others \(mode 644\); chmod 600 it/);
        const open = secretsDir({ validatorKey: validatorKey! });
        fs.chmodSync(open, 0o755);
        assert.match(attempt(open, inConfig), /validatorKeySecret: the secret it names is not a config key of the stack, and secretsDir cannot be read: .*open to group or others \(mode 755\); chmod 700 it/);
        const project = projectWith(baseFleet());
        fs.mkdirSync(path.join(project, "secrets"), { mode: 0o700 });
        fs.writeFileSync(path.join(project, "secrets/validatorKey"), validatorKey!, { mode: 0o600 });
        fs.writeFileSync(path.join(project, "fleets/main.yaml"), stringify({ ...baseFleet(), secretsDir: "secrets" }));
        assert.match(attempt("", inConfig, project), /inside the project; secrets never go into the repository/);
        const link = path.join(tmp("nodefleet-link-"), "secrets");
        fs.symlinkSync(path.join(project, "secrets"), link);
        fs.writeFileSync(path.join(project, "fleets/main.yaml"), stringify({ ...baseFleet(), secretsDir: link }));
        assert.match(attempt("", inConfig, project), /inside the project; secrets never go into the repository/, "a link to a directory inside the project");
        assert.match(attempt(secretsDir({ validatorKey: validatorKey! }), SECRETS), /validatorKeySecret: the secret it names is both a config key of the stack and a file of secretsDir .*: keep one/);
        assert.match(attempt(secretsDir({}), inConfig), /validatorKeySecret: the config key it names is set nowhere: neither a config key of the stack \(pulumi config set --secret <that name> …\) nor a file of that name in secretsDir/);
        assert.match(attempt(path.join(os.tmpdir(), "nodefleet-no-such-dir"), inConfig), /no such directory on this machine/);
    });

    it("status reads the same file; on a machine without the secrets directory, the names it does not hold count as set, unread", () => {
        const { validatorKey, ...inConfig } = SECRETS;
        const project = projectWith({ ...baseFleet(), secretsDir: path.join(os.tmpdir(), "nodefleet-not-on-this-box") });
        const config = { "nodefleet:fleetFile": { value: "fleets/main.yaml", secret: false }, ...Object.fromEntries(Object.keys(inConfig).map((k) => [`nodefleet:${k}`, { secret: true }])) };
        const plan = planFromConfig(config, project);
        assert.deepEqual(plan.hosts.map((h) => h.name), ["h-storage", "h-sequencer", "h-validator"]);
        void validatorKey;
        // With the directory here, what is missing from it is said.
        const here = secretsDir({});
        fs.writeFileSync(path.join(project, "fleets/main.yaml"), stringify({ ...baseFleet(), secretsDir: here }));
        assert.throws(() => planFromConfig(config, project), /invalid fleet definition fleets\/main\.yaml:[\s\S]*validatorKeySecret: the config key it names is set nowhere/);
    });
});

describe("the readers of the project's files follow nodefleet:fleetFile", () => {
    it("a shard whose fleet is in a file is checked against the others as one inline", () => {
        const dir = tmp("nodefleet-shards-");
        const other: any = baseFleet();
        other.shards = ["a", "b"];
        fs.mkdirSync(path.join(dir, "fleets"));
        fs.writeFileSync(path.join(dir, "fleets/b.yaml"), stringify(other));
        fs.writeFileSync(path.join(dir, "Pulumi.b.yaml"), stringify({ config: { "nodefleet:fleetFile": "fleets/b.yaml" } }));
        const mine = fleetSpec.parse({ ...baseFleet(), shards: ["a", "b"] });
        assert.match(shardConfigConflicts(mine, "a", dir).join("\n"), /nodes\[2\]\.name: validator-1 is also a node of shard b/);
        assert.deepEqual(fleetOfStackFile({ "nodefleet:fleetFile": "fleets/b.yaml" }, dir).raw, other);
        fs.writeFileSync(path.join(dir, "Pulumi.b.yaml"), stringify({ config: { "nodefleet:fleetFile": "../b.yaml" } }));
        assert.match(shardConfigConflicts(mine, "a", dir).join("\n"), /shards: shard b: cannot read its fleet from Pulumi\.b\.yaml \(nodefleet:fleetFile: outside the project/);
    });

    it("promotion edits the target's fleet file, not its stack file, and refuses two stacks that share one", () => {
        const dir = tmp("nodefleet-promote-");
        fs.mkdirSync(path.join(dir, "scripts/lib"), { recursive: true });
        for (const f of ["scripts/promote.mjs", "scripts/lib/addresses.mjs"]) fs.copyFileSync(path.join(ROOT, f), path.join(dir, f));
        fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
        const staging = parse(fs.readFileSync(path.join(ROOT, "Pulumi.staging.yaml"), "utf8"));
        const prod = parse(fs.readFileSync(path.join(ROOT, "Pulumi.prod.yaml"), "utf8"));
        fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), fs.readFileSync(path.join(ROOT, "Pulumi.staging.yaml"), "utf8"));
        fs.mkdirSync(path.join(dir, "fleets"));
        const old = prod.config["nodefleet:fleet"];
        old.releases["0g-chain"] = { ...old.releases["0g-chain"], sha256: "a".repeat(64) };
        const prodFleet = `# prod's fleet\n${stringify(old)}`;
        fs.writeFileSync(path.join(dir, "fleets/prod.yaml"), prodFleet);
        fs.writeFileSync(path.join(dir, "Pulumi.prod.yaml"), "config:\n  nodefleet:fleetFile: fleets/prod.yaml\n");
        const promote = (...args: string[]) => spawnSync("node", [path.join(dir, "scripts/promote.mjs"), ...args], { cwd: dir, encoding: "utf8" });
        const r = promote("staging", "prod", "0g-chain");
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stdout, /in fleets\/prod\.yaml only/);
        const now = fs.readFileSync(path.join(dir, "fleets/prod.yaml"), "utf8");
        assert.ok(now.startsWith("# prod's fleet\n"), "its comment kept");
        assert.deepEqual(parse(now).releases["0g-chain"], staging.config["nodefleet:fleet"].releases["0g-chain"]);
        assert.equal(fs.readFileSync(path.join(dir, "Pulumi.prod.yaml"), "utf8"), "config:\n  nodefleet:fleetFile: fleets/prod.yaml\n");
        fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), "config:\n  nodefleet:fleetFile: fleets/prod.yaml\n");
        const same = promote("staging", "prod", "0g-chain");
        assert.notEqual(same.status, 0);
        assert.match(same.stderr, /staging and prod read the same fleet file \(fleets\/prod\.yaml\)/);
    });

    it("the size check counts a structured value as the language host passes it", () => {
        assert.deepEqual(configValues({ "nodefleet:fleetFile": { value: "fleets/a.yaml" }, "nodefleet:fleet": { value: '{"a":1}', objectValue: { a: 1 } }, "aws:x": { objectValue: [1] } }), { "nodefleet:fleetFile": "fleets/a.yaml", "nodefleet:fleet": '{"a":1}', "aws:x": "[1]" });
    });
});

describe("nodefleet check on stock Pulumi: a stack too large for it is warned of, with the figure", () => {
    it("counts the nodes inline or in the fleet file, and warns only on stock past the measured size", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "check-size-"));
        try {
            const nodes = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `storage-${i}` }));
            fs.mkdirSync(path.join(dir, "fleets"));
            fs.writeFileSync(path.join(dir, "fleets/big.yaml"), stringify({ hosts: {}, nodes: nodes(STOCK_STACK_NODES + 1) }));
            assert.equal(fleetNodes({ "nodefleet:fleetFile": { value: "fleets/big.yaml" } }, dir), STOCK_STACK_NODES + 1);
            assert.equal(fleetNodes({ "nodefleet:fleet": { objectValue: { hosts: {}, nodes: nodes(3) } } }, dir), 3);
            assert.equal(fleetNodes({ "nodefleet:fleetFile": { value: "fleets/missing.yaml" } }, dir), undefined, "unreadable here: the program says why");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
        assert.equal(stockSizeWarning("prod", STOCK_STACK_NODES + 1, undefined), undefined, "nodefleet's toolchain (the default)");
        assert.equal(stockSizeWarning("prod", STOCK_STACK_NODES + 1, "nodefleet"), undefined);
        assert.equal(stockSizeWarning("prod", STOCK_STACK_NODES, "stock"), undefined);
        const w = stockSizeWarning("prod", 120, "stock") ?? "";
        assert.match(w, /^stack prod holds 120 nodes: on stock Pulumi a first up grows with the square of the nodes in one stack \(measured on 2 cores as the pipeline runs it: 100 nodes 339 CPU-s/);
        assert.match(w, new RegExp(`shards of at most ${STOCK_STACK_NODES} nodes`));
    });
});
