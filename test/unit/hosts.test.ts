// Strict-mock tests of what each host kind registers: exact resources, key inputs,
// parents and step ordering. They cannot prove a command works on a host (the VM
// tier does) or that AWS accepts the inputs (its plugin cannot be built here; Hetzner's
// real provider checks its inputs in test/cli/hetzner-preview.test.ts).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { buildStack } from "../support/stack";
import { registered, countByType, inputsOf, scriptOf, deleteScriptOf, calls, installMocks, setStackConfig, Recorded, Registered } from "../support/mocks";
import { baseFleet, SECRETS, RELEASES, awsHost, hetznerHost, validatorNode, storageNode, sequencerNode } from "../support/fixtures";
import { loadFleet } from "../../components/config/load";
import { HOST_TOOLS_DIR, HostBundle, roleTools, runnerDigest, secretInBody } from "../../components/hosts/tools";
import { compactSshKey } from "../../components/hosts/ssh-key";
import { HOSTFILES_DIR } from "../../components/base/render";

/** A fleet with one node of `role` on one host of the given spec. */
function single(role: "storage" | "sequencer" | "validator", host: any) {
    const node = { storage: storageNode, sequencer: sequencerNode, validator: validatorNode }[role]();
    return { hosts: { h1: host }, nodes: [{ ...node, host: "h1" }], releases: { [node.release]: RELEASES()[node.release as keyof ReturnType<typeof RELEASES>] } };
}

function byName(recorded: Recorded[], name: string): Recorded {
    const r = recorded.find((x) => x.name === name);
    assert.ok(r, `no resource ${name}; have ${recorded.map((x) => x.name).join(", ")}`);
    return r;
}

/** Whether `from` runs after `to`: `to` is among its dependencies, directly or through others. */
function after(recorded: Recorded[], from: string, to: string): boolean {
    const seen = new Set<string>();
    const todo = [...byName(recorded, from).dependsOn];
    while (todo.length) {
        const n = todo.pop()!;
        if (n === to) return true;
        if (seen.has(n)) continue;
        seen.add(n);
        todo.push(...(recorded.find((r) => r.name === n)?.dependsOn ?? []));
    }
    return false;
}

/**
 * Every step that runs a script of its host's bundle (its stdin's or its delete's runner) runs after
 * that host's copy (the copy step with the same connection): the invariant remoteStep keeps with the
 * fewest edges. Returns how many such steps it checked.
 */
function assertBundledAfterCopy(recorded: Recorded[]): number {
    const target = (x: Registered) => `${x.inputs.connection?.host}:${x.inputs.connection?.port}`;
    const copies = registered.filter((x) => x.type === "command:remote:CopyToRemote");
    let n = 0;
    for (const r of registered.filter((x) => x.type === "command:remote:Command")) {
        if (runnerDigest(String(r.inputs.stdin ?? "")) === undefined && runnerDigest(String(r.inputs.delete ?? "")) === undefined) continue;
        const copy = copies.find((c) => target(c) === target(r));
        assert.ok(copy !== undefined && after(recorded, r.name, copy.name), `${r.name} runs a bundled script but not after its host's copy`);
        n++;
    }
    return n;
}

const LOCAL_PORTS = [56545, 56546, 56551, 56657, 56658, 56660, 5678, 5679, 50051, 8880, 8080];

describe("existing host", () => {
    it("registers no cloud resources and chains the bundle's copy -> preflight -> bootstrap -> firewall", async () => {
        const { recorded } = await buildStack(single("validator", baseFleet().hosts["h-validator"]), SECRETS);
        // host: preflight, bootstrap, 3 firewall steps, the 0g-chain release and its teardown; validator: teardown, key, configure, health
        assert.deepEqual(countByType(), { "command:remote:Command": 11, "command:remote:CopyToRemote": 1, "pulumi-nodejs:dynamic:Resource": 1, "pulumi:providers:pulumi-nodejs": 1 });
        assert.deepEqual(calls, []);
        // The copy of the host's bundle is its first step: the preflight, the bootstrap and the
        // firewall run their scripts from it (the firewall's teardown, whose create only echoes, does not).
        const steps = ["tools", "preflight", "bootstrap", "firewall-teardown", "firewall-apply", "firewall-confirm"].map((s) => byName(recorded, `fleet-h1-${s}`));
        assert.deepEqual(steps[0].dependsOn, []);
        // (each step after the one before it; that is after the copy, with no edge of its own to it)
        for (let i = 1; i < steps.length; i++) assert.deepEqual(steps[i].dependsOn, [steps[i - 1].name], `${steps[i].name} must wait for ${steps[i - 1].name}`);
        assert.ok(assertBundledAfterCopy(recorded) >= 8);
        for (const s of steps) assert.equal(s.parent, "fleet-h1");
        assert.equal(byName(recorded, "fleet-h1").parent, "fleet");
        assert.equal(byName(recorded, "fleet-h1").type, "nodefleet:host:ExistingHost");
    });

    it("installs a node's release after the firewall is confirmed and the host tools copied, removing it on destroy", async () => {
        const fleet = single("validator", baseFleet().hosts["h-validator"]);
        (fleet as any).releases = { "0g-chain": { url: "https://example.org/aristotle-v1.0.6.tar.gz", sha256: "ab".repeat(32) } };
        (fleet.nodes[0] as any).release = "0g-chain";
        const { recorded } = await buildStack(fleet, SECRETS);
        assert.deepEqual(countByType(), { "command:remote:Command": 11, "command:remote:CopyToRemote": 1, "pulumi-nodejs:dynamic:Resource": 1, "pulumi:providers:pulumi-nodejs": 1 });
        // The removal is held by a teardown whose create never changes (never replaced, so never
        // run but by destroy); the install, replaced by a new version or a repair, removes nothing.
        // (the tools first, then one step after the other: at most two SSH connections per host at once)
        assert.deepEqual(byName(recorded, "fleet-h1-tools").dependsOn, []);
        assert.deepEqual(byName(recorded, "fleet-h1-release-0g-chain-teardown").dependsOn, ["fleet-h1-firewall-confirm"]);
        assert.deepEqual(byName(recorded, "fleet-h1-release-0g-chain").dependsOn, ["fleet-h1-release-0g-chain-teardown"]);
        assertBundledAfterCopy(recorded);
        const inputs = inputsOf("fleet-h1-release-0g-chain");
        assert.match(scriptOf("fleet-h1-release-0g-chain"), new RegExp(`^sha256=${"ab".repeat(32)}$`, "m"));
        assert.match(scriptOf("fleet-h1-release-0g-chain"), /^url=https:\/\/example\.org\/aristotle-v1\.0\.6\.tar\.gz$/m);
        assert.equal(inputs.delete, undefined);
        const teardown = inputsOf("fleet-h1-release-0g-chain-teardown");
        assert.match(teardown.delete, /^\/bin\/sh -c /);
        assert.match(deleteScriptOf("fleet-h1-release-0g-chain-teardown"), new RegExp(`dest=/opt/nodefleet/releases/0g-chain-${"ab".repeat(12)}`));
        assert.equal(teardown.stdin, "echo 'release 0g-chain: teardown registered'\n");
    });

    it("copies the host tools its nodes use to the host once, first, as files named by their sha256; the host's and the nodes' steps wait for it", async () => {
        // A storage node and a validator on one host: the modules both use (nodefleet_rpc.py, the diagnosis and fault tables) are copied once.
        const fleet = baseFleet();
        const both = { hosts: { h1: fleet.hosts["h-validator"] }, nodes: [{ ...validatorNode(), host: "h1" }, { ...storageNode(), host: "h1" }], releases: RELEASES() };
        const { recorded } = await buildStack(both, SECRETS);
        const copies = registered.filter((r) => r.type === "command:remote:CopyToRemote");
        assert.deepEqual(copies.map((r) => r.name), ["fleet-h1-tools"]);
        const copy = copies[0]!;
        assert.equal(copy.inputs.remotePath, HOST_TOOLS_DIR);
        assert.deepEqual(copy.secretPaths, ["connection"]);
        assert.deepEqual(copy.inputs.triggers, ["192.0.2.12:22"]);
        assert.deepEqual(byName(recorded, "fleet-h1-tools").dependsOn, []);
        for (const node of ["validator-1", "storage-1"]) assert.ok(after(recorded, `fleet-${node}-teardown`, "fleet-h1-tools"), `${node} waits for the tools`);
        assertBundledAfterCopy(recorded);
        // The archive: a directory of the project (relative, so the same in every checkout), its
        // files the union of both roles' tools and the scripts of the host's steps (its preflight,
        // bootstrap and firewall, its releases' installs, its nodes' key steps without their keys
        // and configure steps), each named by the sha256 of its content.
        const dir = copy.archivePath!;
        assert.match(dir, /^\.nodefleet\/tools\/[0-9a-f]{32}\/$/);
        const wanted = new Map([...roleTools("validator"), ...roleTools("storage")].map((t) => [t.digest, t.name]));
        const bundled = ["fleet-h1-preflight", "fleet-h1-bootstrap", "fleet-h1-firewall-apply", "fleet-h1-firewall-confirm", "fleet-h1-release-0g-chain", "fleet-h1-release-zgs", "fleet-validator-1-validator-key", "fleet-validator-1-configure", "fleet-storage-1-miner-key", "fleet-storage-1-configure"];
        const runs = new Map(bundled.map((n) => [runnerDigest(inputsOf(n).stdin) ?? `${n}: not bundled`, n]));
        // and the removal scripts of its teardown steps (their delete commands run a runner too).
        const teardowns = ["fleet-h1-firewall-teardown", "fleet-h1-release-0g-chain-teardown", "fleet-h1-release-zgs-teardown", "fleet-validator-1-teardown", "fleet-storage-1-teardown"];
        const removals = teardowns.map((n) => runnerDigest(inputsOf(n).delete) ?? `${n}: not bundled`);
        assert.deepEqual(fs.readdirSync(dir).sort(), [...wanted.keys(), ...runs.keys(), ...removals].sort());
        for (const n of teardowns) assert.ok(inputsOf(n).delete.length < 600, `${n}: a delete of ${inputsOf(n).delete.length} characters`);
        for (const [digest, name] of wanted) {
            const body = fs.readFileSync(path.join(dir, digest));
            assert.deepEqual(body, fs.readFileSync(path.join(HOSTFILES_DIR, name)), `${name}: copied as it is`);
            assert.equal(crypto.createHash("sha256").update(body).digest("hex"), digest);
        }
        for (const [digest, name] of runs) {
            assert.equal(crypto.createHash("sha256").update(fs.readFileSync(path.join(dir, digest))).digest("hex"), digest, name);
            // Its state keeps the runner: its own digest, checked on the host before the script runs.
            const runner: string = inputsOf(name).stdin;
            // (a key step's runner sets its secrets, then runs the script in the same shell)
            const own = /-key$/.test(name) ? runner.slice(0, runner.indexOf("nodefleet_secret_")) : runner;
            assert.ok(own.length < 500, `${name}: a runner of ${own.length} characters`);
            assert.ok(runner.endsWith(/-key$/.test(name) ? '\n. "$f"\n' : '\nexec /bin/sh "$f"\n'), name);
            assert.match(runner, /\[ "\$\(sha256sum <"\$f"\|cut -c1-64\)" = "\$nodefleet_run" \] \|\|/);
            assert.ok(after(recorded, name, "fleet-h1-tools"), `${name} runs after the copy`);
        }
        assert.equal(wanted.size, roleTools("validator").length + roleTools("storage").length - 4, "nodefleet_rpc.py, nodefleet_health.py, nodefleet_faults.py and faults.json once");
    });

    it("every step of a whole fleet that runs a bundled script (or removal) runs after its own host's copy", async () => {
        const { recorded } = await buildStack(baseFleet(), SECRETS);
        assert.equal(registered.filter((x) => x.type === "command:remote:CopyToRemote").length, 3);
        assert.ok(assertBundledAfterCopy(recorded) >= 25);
    });

    it("puts a key step's body in the bundle only without its secrets: a body holding one is refused", async () => {
        installMocks();
        const bundle = new HostBundle("t-tools", { connection: { host: "192.0.2.1" }, tools: [], machine: "192.0.2.1:22", after: [] }, {});
        const secrets = pulumi.secret<Record<string, string>>({ key: '{"priv_key": "SECRET-LINE-0123"}\n' });
        const ok = bundle.run("t-ok", "#!/bin/sh\necho ok\n", secrets);
        assert.match(await (ok as any).promise(), /^nodefleet_secret_key='\{"priv_key": "SECRET-LINE-0123"\}'$/m);
        assert.equal(await pulumi.isSecret(ok), true);
        // What refuses a body holding a secret (the run's output then fails with the secret's name).
        assert.equal(secretInBody('#!/bin/sh\necho \'{"priv_key": "SECRET-LINE-0123"}\'\n', { urls: "x\n", key: '{"priv_key": "SECRET-LINE-0123"}\n' }), "key");
        assert.equal(secretInBody("#!/bin/sh\nput \"$nodefleet_secret_key\"\n", { key: '{"priv_key": "SECRET-LINE-0123"}\n' }), undefined);
    });

    it("connects with the pinned host key and a secret private key, runs scripts from stdin", async () => {
        const { recorded } = await buildStack(single("validator", baseFleet().hosts["h-validator"]), SECRETS);
        const pre = inputsOf("fleet-h1-preflight");
        assert.equal(pre.connection.host, "192.0.2.12");
        assert.equal(pre.connection.port, 22);
        assert.equal(pre.connection.user, "root");
        assert.equal(pre.connection.hostKey, baseFleet().hosts["h-validator"].hostKey);
        assert.equal(pre.create, "/bin/sh -s");
        assert.equal(pre.addPreviousOutputInEnv, false);
        assert.match(scriptOf("fleet-h1-preflight"), /want_cores=8\nwant_mem_gb=32\nwant_disk_gb=1000\nwant_ssd=1/);
        assert.match(scriptOf("fleet-h1-preflight"), /^mode=enforce$/m);
        // The private key reaches the provider only as a secret.
        const props = byName(recorded, "fleet-h1-preflight").props as { connection: pulumi.Output<unknown> };
        assert.equal(await pulumi.isSecret(pulumi.output(props.connection)), true);
        for (const r of registered.filter((x) => x.custom && x.type === "command:remote:Command")) {
            assert.ok(!String(r.inputs.create).includes("PRIVATE KEY"), `${r.name} has key material in its command line`);
            assert.ok(!String(r.inputs.stdin).includes("PRIVATE KEY"), `${r.name} has key material in its script`);
            // The validator key step's stdin carries the consensus key: it is a secret too; the
            // configure and health steps' triggers hold a digest of the node's URLs (they may carry API keys).
            const expected = r.name.endsWith("-validator-key") ? ["connection", "stdin", "triggers"] : r.name.endsWith("-configure") || r.name.endsWith("-health") ? ["connection", "triggers"] : ["connection"];
            assert.deepEqual(r.secretPaths.sort(), expected, `${r.name}: the connection (with the private key) must arrive as a secret`);
        }
    });

    it("the steps carry an Ed25519 key as its short PKCS#8 form, the drift check (OpenSSH's client) the key as given", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-hostkey-"));
        try {
            assert.equal(spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "k")]).status, 0);
            const key = fs.readFileSync(path.join(dir, "k"), "utf8");
            await buildStack(single("validator", baseFleet().hosts["h-validator"]), { ...SECRETS, sshKey: key });
            const steps = registered.filter((r) => r.type === "command:remote:Command" || r.type === "command:remote:CopyToRemote");
            assert.ok(steps.length > 5);
            for (const r of steps) {
                assert.equal(r.inputs.connection.privateKey, compactSshKey(key), r.name);
                assert.ok(r.secretPaths.includes("connection"), r.name);
            }
            assert.notEqual(compactSshKey(key), key);
            const drift = registered.find((r) => r.type === "pulumi-nodejs:dynamic:Resource")!;
            assert.equal(drift.inputs.connection.privateKey, key);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("one drift check per host, its SSH connection a secret; each step that records the host answers to its group's repair count", async () => {
        await buildStack(single("validator", baseFleet().hosts["h-validator"]), SECRETS);
        const drift = registered.filter((r) => r.type === "pulumi-nodejs:dynamic:Resource");
        assert.deepEqual(drift.map((r) => [r.name, r.inputs.host]), [["fleet-h1-drift", "h1"]]);
        assert.deepEqual(drift[0]!.secretPaths, ["connection"]);
        // Through a provider of its own, configured with nothing: Pulumi gives the default dynamic
        // provider the whole stack config, keys included.
        assert.match(String(drift[0]!.provider), /\$pulumi:providers:pulumi-nodejs::drift::/);
        const provider = registered.find((r) => r.type === "pulumi:providers:pulumi-nodejs")!;
        assert.deepEqual(Object.keys(provider.inputs).filter((k) => k !== "version"), []);
        assert.match(drift[0]!.inputs.toolHash, /^[0-9a-f]{16}$/);
        assert.ok(!JSON.stringify(drift[0]!.inputs.__provider ?? "").includes("PRIVATE KEY"), "the serialized provider holds no key");
        // The last trigger of each recording step is its group's repair count (0 until a repair).
        const answering = registered.filter((r) => r.type === "command:remote:Command" && /(-release-(?!.*-teardown$).*|-firewall-confirm|-configure|-validator-key)$/.test(r.name));
        assert.deepEqual(answering.map((r) => r.name).sort(), ["fleet-h1-firewall-confirm", "fleet-h1-release-0g-chain", "fleet-validator-1-configure", "fleet-validator-1-validator-key"]);
        for (const r of answering) assert.equal(r.inputs.triggers.at(-1), 0, r.name);
        for (const name of ["fleet-h1-bootstrap", "fleet-h1-firewall-apply", "fleet-h1-release-0g-chain-teardown", "fleet-validator-1-health"]) {
            assert.ok(!inputsOf(name).triggers.includes(0), `${name} is not run again by a repair`);
        }
        // Their scripts record into their group's directory.
        assert.match(scriptOf("fleet-h1-firewall-confirm"), /^record=\/var\/lib\/nodefleet\/drift\/firewall$/m);
        assert.match(scriptOf("fleet-h1-release-0g-chain"), /^record=\/var\/lib\/nodefleet\/drift\/release\.0g-chain$/m);
        assert.match(scriptOf("fleet-validator-1-configure"), /^record=\/var\/lib\/nodefleet\/drift\/validator-1\.configure$/m);
        assert.match(scriptOf("fleet-validator-1-configure"), /"driftUnits": "\/var\/lib\/nodefleet\/drift\/validator-1\.configure\+units"/);
    });

    it("opens exactly the validator's p2p ports and SSH from admin CIDRs in nftables", async () => {
        await buildStack(single("validator", baseFleet().hosts["h-validator"]), SECRETS);
        const apply: string = scriptOf("fleet-h1-firewall-apply");
        const accepts = apply.split("\n").filter((l) => / accept comment /.test(l)).map((l) => l.trim().replace(/ comment .*/, ""));
        assert.deepEqual(accepts, [
            "ip saddr { 198.51.100.0/24 } tcp dport 22 accept",
            "tcp dport 56303 accept",
            "udp dport 56303 accept",
            "tcp dport 56656 accept",
        ]);
        for (const p of LOCAL_PORTS) assert.ok(!apply.includes(`dport ${p} `), `port ${p} must never be opened`);
        assert.match(apply, /policy drop;/);
    });

    it("uses sudo for a non-root user and the forwarded port for the connection", async () => {
        const host = { ...baseFleet().hosts["h-storage"], user: "admin", port: 2222, sshdPort: 22 };
        await buildStack(single("storage", host), SECRETS);
        const boot = inputsOf("fleet-h1-bootstrap");
        assert.equal(boot.create, "sudo -n /bin/sh -s");
        assert.equal(boot.connection.port, 2222);
        assert.match(scriptOf("fleet-h1-firewall-apply"), /tcp dport 22 accept/);
        assert.match(scriptOf("fleet-h1-bootstrap"), /install -d -o "\$operator" -g "\$operator" -m 0750 \/data\/storage-1/);
    });

    it("registers the teardown before the apply so destroy removes the table last", async () => {
        await buildStack(single("storage", baseFleet().hosts["h-storage"]), SECRETS);
        assert.equal(inputsOf("fleet-h1-firewall-teardown").delete.startsWith("/bin/sh -c "), true);
        assert.match(deleteScriptOf("fleet-h1-firewall-teardown"), /nft delete table inet nodefleet/);
        assert.equal(inputsOf("fleet-h1-firewall-apply").delete, undefined);
        // its script, the ruleset's digest, and the firewall's repair count (the drift check's)
        assert.deepEqual(inputsOf("fleet-h1-firewall-confirm").triggers.slice(2), [0]);
    });

    it("puts two nodes on one host behind one firewall with both roles' ports", async () => {
        const f = baseFleet();
        f.nodes[0].host = "h-validator";
        delete f.hosts["h-storage"];
        f.nodes = [f.nodes[0], f.nodes[2]];
        delete f.hosts["h-sequencer"];
        await buildStack(f, SECRETS);
        // host: preflight, bootstrap, 3 firewall steps, the zgs and 0g-chain releases and their teardowns; storage and
        // validator roles: teardown, key, configure, health each
        assert.deepEqual(countByType(), { "command:remote:Command": 17, "command:remote:CopyToRemote": 1, "pulumi-nodejs:dynamic:Resource": 1, "pulumi:providers:pulumi-nodejs": 1 });
        const apply: string = scriptOf("fleet-h-validator-firewall-apply");
        for (const p of ["tcp dport 1234", "udp dport 1234", "tcp dport 56303", "udp dport 56303", "tcp dport 56656"]) assert.ok(apply.includes(p), p);
        assert.match(scriptOf("fleet-h-validator-preflight"), /want_cores=16\nwant_mem_gb=64\nwant_disk_gb=1500/);
    });
});

describe("AWS host", () => {
    it("registers exactly the instance, data volume, attachment, EIP, security group and its rules", async () => {
        const { recorded } = await buildStack(single("validator", awsHost()), SECRETS);
        assert.deepEqual(countByType(), {
            "aws:ec2/securityGroup:SecurityGroup": 1,
            // SSH from one admin CIDR + (303/tcp, 303/udp, 656/tcp) x (IPv4, IPv6)
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": 7,
            "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": 2,
            "aws:ec2/instance:Instance": 1,
            "aws:ebs/volume:Volume": 1,
            "aws:ec2/volumeAttachment:VolumeAttachment": 1,
            "aws:ec2/eip:Eip": 1,
            // the host key, data volume and bootstrap steps, the release and its teardown, and the validator's four steps
            "command:remote:Command": 9,
            "command:remote:CopyToRemote": 1,
            // the host's first-boot key, its host key swap and drift check (HostDrift), and their provider
            "pulumi-nodejs:dynamic:Resource": 3,
            "pulumi:providers:pulumi-nodejs": 1,
        });
        assert.deepEqual(calls.map((c) => c.token).sort(), ["aws:ec2/getAmi:getAmi", "aws:ec2/getVpc:getVpc"]);
        assert.deepEqual(calls.find((c) => c.token === "aws:ec2/getAmi:getAmi")!.inputs.owners, ["136693071363"]);
        const roleParts = (x: Recorded) => x.type === "nodefleet:role:ValidatorNode" || x.parent === "fleet-validator-1";
        // (the drift checks' provider is the fleet's, one for all hosts)
        for (const r of recorded.filter((x) => x.type !== "nodefleet:host:AwsHost" && x.type !== "nodefleet:fleet:Fleet" && x.type !== "pulumi:providers:pulumi-nodejs" && !roleParts(x))) assert.equal(r.parent, "fleet-h1", r.name);

        const instance = inputsOf("fleet-h1-instance");
        assert.equal(instance.instanceType, "m6i.2xlarge");
        assert.equal(instance.region, "eu-central-1");
        assert.equal(instance.ami, "ami-0a1b2c3d4e5f60718");
        assert.equal(instance.keyName, "ops");
        assert.deepEqual(instance.metadataOptions, { httpTokens: "required" });
        assert.equal(instance.rootBlockDevice.encrypted, true);
        assert.deepEqual(byName(recorded, "fleet-h1-instance").ignoreChanges, ["ami", "userData"]);

        const vol = inputsOf("fleet-h1-data");
        assert.deepEqual([vol.size, vol.type, vol.encrypted, vol.availabilityZone], [1000, "gp3", true, "eu-central-1a"]);
        assert.equal(byName(recorded, "fleet-h1-data").protect, true);
        assert.equal(inputsOf("fleet-h1-data-attach").deviceName, "/dev/sdf");

        const rules = registered.filter((r) => r.type === "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule").map((r) => `${r.inputs.ipProtocol}/${r.inputs.fromPort}-${r.inputs.toPort} ${r.inputs.cidrIpv4 ?? r.inputs.cidrIpv6}`);
        assert.deepEqual(rules.sort(), [
            "tcp/22-22 198.51.100.0/24",
            "tcp/56303-56303 0.0.0.0/0",
            "tcp/56303-56303 ::/0",
            "tcp/56656-56656 0.0.0.0/0",
            "tcp/56656-56656 ::/0",
            "udp/56303-56303 0.0.0.0/0",
            "udp/56303-56303 ::/0",
        ]);
    });

    it("mounts the data volume by its NVMe id after attach, then bootstraps", async () => {
        const { recorded } = await buildStack(single("storage", { ...awsHost(), dataVolume: { sizeGb: 2000, iops: 6000, throughput: 500 } }), SECRETS);
        const mount = inputsOf("fleet-h1-data-volume");
        assert.match(mount.stdin, /^dev=\/dev\/disk\/by-id\/nvme-Amazon_Elastic_Block_Store_vol0123456789abcdef0$/m);
        assert.equal(mount.connection.host, "203.0.113.50");
        assert.equal(mount.connection.user, "admin");
        assert.equal(mount.create, "sudo -n /bin/sh -s");
        assert.deepEqual(byName(recorded, "fleet-h1-data-volume").dependsOn, ["fleet-h1-data-attach", "fleet-h1-eip", "fleet-h1-host-key-swap"]);
        assert.deepEqual(byName(recorded, "fleet-h1-tools").dependsOn, ["fleet-h1-data-volume"]);
        assert.ok(assertBundledAfterCopy(recorded) >= 5);
        assert.deepEqual(byName(recorded, "fleet-h1-bootstrap").dependsOn, ["fleet-h1-data-volume", "fleet-h1-tools"]);
        const vol = inputsOf("fleet-h1-data");
        assert.deepEqual([vol.size, vol.iops, vol.throughput], [2000, 6000, 500]);
    });

    it("looks up the VPC of a configured subnet instead of the default VPC", async () => {
        await buildStack(single("sequencer", { ...awsHost(), subnetId: "subnet-0a1b2c3d" }), SECRETS);
        assert.deepEqual(calls.map((c) => c.token).sort(), ["aws:ec2/getAmi:getAmi", "aws:ec2/getSubnet:getSubnet"]);
        assert.equal(inputsOf("fleet-h1-sg").vpcId, "vpc-0fedcba9");
        assert.equal(inputsOf("fleet-h1-instance").subnetId, "subnet-0a1b2c3d");
    });

    it("opens the sequencer RPC only to its allowed CIDRs, never to the world", async () => {
        const fleet = single("sequencer", awsHost());
        (fleet.nodes[0] as any).sequencer.rpcAllowedCidrs = ["10.20.0.0/16"];
        await buildStack(fleet, SECRETS);
        const rpc = registered.filter((r) => r.type.endsWith("SecurityGroupIngressRule") && r.inputs.fromPort === 8080);
        assert.deepEqual(rpc.map((r) => r.inputs.cidrIpv4), ["10.20.0.0/16"]);
        const all = registered.filter((r) => r.type.endsWith("SecurityGroupIngressRule"));
        assert.deepEqual([...new Set(all.map((r) => r.inputs.fromPort))].sort(), [22, 40400, 8080]);
    });
});

describe("Hetzner host", () => {
    it("registers exactly server, primary IP, volume, attachment and firewall", async () => {
        const { recorded } = await buildStack(single("storage", hetznerHost()), SECRETS);
        assert.deepEqual(countByType(), {
            "pulumi:providers:hcloud": 1,
            "hcloud:index/firewall:Firewall": 1,
            "hcloud:index/primaryIp:PrimaryIp": 1,
            "hcloud:index/server:Server": 1,
            "hcloud:index/volume:Volume": 1,
            "hcloud:index/volumeAttachment:VolumeAttachment": 1,
            // host key, data volume mount, bootstrap, release and its teardown; the storage role's teardown, key, configure, health
            "command:remote:Command": 9,
            "command:remote:CopyToRemote": 1,
            // the host's first-boot key, its host key swap and drift check (HostDrift), and their provider
            "pulumi-nodejs:dynamic:Resource": 3,
            "pulumi:providers:pulumi-nodejs": 1,
        });
        assert.deepEqual(calls, []);
        // Every hcloud resource through the one explicit provider, pinned to the plugin nodefleet is tested with.
        assert.equal(byName(recorded, "hcloud").type, "pulumi:providers:hcloud");
        assert.equal(byName(recorded, "hcloud").version, "1.39.1");
        const hcloudResources = registered.filter((r) => r.type.startsWith("hcloud:"));
        for (const r of hcloudResources) assert.match(r.provider ?? "", /[:$]pulumi:providers:hcloud::hcloud::/, `${r.name} is not on the explicit provider`);
        const server = inputsOf("fleet-h1-server");
        assert.deepEqual([server.serverType, server.location, server.image], ["ccx33", "fsn1", "debian-12"]);
        assert.deepEqual(server.sshKeys, ["ops"]);
        assert.equal(server.firewallIds.length, 1);
        assert.equal(server.publicNets[0].ipv4Enabled, true);
        // What the real provider warned about (test/cli/hetzner-preview.test.ts): no datacenter, no assigneeType.
        assert.equal(inputsOf("fleet-h1-ip").location, "fsn1");
        assert.equal(inputsOf("fleet-h1-ip").datacenter, undefined);
        assert.equal(inputsOf("fleet-h1-ip").assigneeType, undefined);
        assert.equal(inputsOf("fleet-h1-data").size, 1000);
        assert.equal(byName(recorded, "fleet-h1-data").protect, true);
        assert.equal(inputsOf("fleet-h1-data").deleteProtection, true);
        const rules = inputsOf("fleet-h1-fw").rules.map((r: any) => `${r.protocol}/${r.port ?? "-"} ${r.sourceIps.join(",")}`);
        assert.deepEqual(rules, ["tcp/22 198.51.100.0/24", "tcp/1234 0.0.0.0/0,::/0", "udp/1234 0.0.0.0/0,::/0", "icmp/- 0.0.0.0/0,::/0"]);
        assert.match(scriptOf("fleet-h1-data-volume"), /^dev=\/dev\/disk\/by-id\/scsi-0HC_Volume_\d+$/m);
        assert.equal(inputsOf("fleet-h1-data-volume").connection.host, "203.0.113.60");
    });
});

describe("invalid config", () => {
    it("registers no resource and names the path and reason", async () => {
        installMocks();
        const f = baseFleet();
        f.nodes[1].sequencer.coinbase = "0x1234";
        setStackConfig(f, SECRETS);
        assert.throws(() => loadFleet(), (e: unknown) => e instanceof pulumi.RunError && /nodes\[1\]\.sequencer\.coinbase: not an EVM address/.test((e as Error).message));
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(registered.length, 0);
    });

    it("refuses a secret key stored in plain text through the real config path", () => {
        installMocks();
        setStackConfig(baseFleet(), SECRETS, ["sequencerKey"]);
        assert.throws(() => loadFleet(), /nodes\[1\]\.sequencer\.validatorPrivateKeySecret: the config key it names is stored in plain text/);
    });

    it("refuses an encrypted value inside the fleet object", () => {
        installMocks();
        pulumi.runtime.setAllConfig({ "nodefleet:fleet": JSON.stringify(baseFleet()) }, ["nodefleet:fleet"]);
        assert.throws(() => loadFleet(), /nodefleet:fleet: the fleet config holds an encrypted value/);
    });
});
