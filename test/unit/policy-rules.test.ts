// The policy pack's rules as pure functions, on resources shaped as the engine plans them. The
// CLI tier runs the pack for real on command resources; the AWS and Hetzner shapes are only
// proven here (no aws or hcloud provider plugin for the engine in this workplace).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as rules from "../../policy/rules";
import { hardwareBelowTarget } from "../../policy/hardware";
import { bundleRunner } from "../../components/hosts/tools";
import { validatorKeyJson } from "../support/fixtures";
import { renderCloudConfig } from "../../components/hosts/first-boot";
import { newHostKey } from "../../components/hosts/host-key-provider";

let n = 0;
function res(type: string, name: string, props: Record<string, unknown>, parent?: string, dependencies: string[] = []): rules.Planned {
    return { urn: `urn:pulumi:prod::nodefleet::${type}::${name}#${n++}`, type, name, props, parent, dependencies };
}

describe("policy rules", () => {
    it("knows the RPC, engine, consensus-RPC and admin ports from the P2P ones", () => {
        for (const p of [8545, 56545, 56546, 56551, 26657, 56657, 56658, 56660, 5678, 5679, 50051, 8080, 8880]) assert.equal(rules.isRpcPort(p), true, String(p));
        for (const p of [22, 1234, 40400, 56303, 56656, 30303]) assert.equal(rules.isRpcPort(p), false, String(p));
    });

    it("reads nftables accept rules: no saddr, 0.0.0.0/0 or ::/0 is the world", () => {
        const o = rules.nftOpenings([
            "ip saddr { 192.0.2.0/24 } tcp dport 22 accept comment \"SSH\"",
            "tcp dport 56303 accept",
            "ip6 saddr { ::/0 } tcp dport 8080 accept",
            "udp dport 9000-9010 accept",
            "ct state established,related accept",
        ].join("\n"));
        assert.deepEqual(o.map((x) => [x.from, x.to, x.protocol, x.world]), [[22, 22, "tcp", false], [56303, 56303, "tcp", true], [8080, 8080, "tcp", true], [9000, 9010, "udp", true]]);
    });

    it("rpc-open-to-world: an AWS ingress rule, a legacy security group and a Hetzner firewall rule", () => {
        const v = rules.rpcOpenToWorld([
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "h-in-1", { ipProtocol: "tcp", fromPort: 56545, toPort: 56545, cidrIpv4: "0.0.0.0/0" }),
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "h-in-2", { ipProtocol: "tcp", fromPort: 56545, toPort: 56545, cidrIpv4: "192.0.2.0/24" }),
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "h-in-3", { ipProtocol: "tcp", fromPort: 40400, toPort: 40400, cidrIpv6: "::/0" }),
            res("aws:ec2/securityGroup:SecurityGroup", "legacy", { ingress: [{ protocol: "tcp", fromPort: 8000, toPort: 9000, cidrBlocks: ["0.0.0.0/0"] }] }),
            res("hcloud:index/firewall:Firewall", "h-fw", { rules: [{ direction: "in", protocol: "tcp", port: "26657", sourceIps: ["0.0.0.0/0", "::/0"] }, { direction: "in", protocol: "icmp", sourceIps: ["0.0.0.0/0"] }] }),
        ]);
        assert.deepEqual(v.map((x) => x.message.split(":")[0]), ["h-in-1", "legacy", "h-fw"]);
        assert.match(v[1].message, /port 8080\/tcp/);
    });

    it("metrics-open-to-world: node_exporter, Prometheus, Alertmanager (and its cluster port), CometBFT's <prefix>660; a port open to the monitoring host alone passes", () => {
        for (const p of [9100, 9090, 9093, 9094, 56660, 26660]) assert.equal(rules.isMetricsPort(p), true, String(p));
        for (const p of [22, 9091, 40400, 56656, 660]) assert.equal(rules.isMetricsPort(p), false, String(p));
        const v = rules.metricsOpenToWorld([
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "h-in-1", { ipProtocol: "tcp", fromPort: 9100, toPort: 9100, cidrIpv4: "192.0.2.10/32" }),
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "h-in-2", { ipProtocol: "tcp", fromPort: 9000, toPort: 9200, cidrIpv4: "0.0.0.0/0" }),
            res("hcloud:index/firewall:Firewall", "h-fw", { rules: [{ direction: "in", protocol: "tcp", port: "56660", sourceIps: ["0.0.0.0/0", "::/0"] }] }),
            res("command:remote:Command", "fleet-h-firewall-apply", { stdin: "ip saddr { 192.0.2.10/32 } tcp dport 9100 accept\ntcp dport 9093 accept\n" }),
        ]);
        assert.deepEqual(v.map((x) => x.message.split(":")[0]).sort(), ["fleet-h-firewall-apply", "h-fw", "h-in-2"]);
        assert.match(v.find((x) => x.message.startsWith("h-in-2"))!.message, /port 9100\/tcp serves metrics or the monitoring stack and is open to the world/);
    });

    it("ssh-open-to-world: port 22 and the port the connections use", () => {
        const v = rules.sshOpenToWorld([
            res("command:remote:Command", "fleet-a-bootstrap", { connection: { host: "h", port: 2222 } }),
            res("hcloud:index/firewall:Firewall", "fw", { rules: [{ direction: "in", protocol: "tcp", port: "2222", sourceIps: ["::/0"] }] }),
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "in", { ipProtocol: "tcp", fromPort: 22, toPort: 22, cidrIpv4: "198.51.100.7/32" }),
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "all", { ipProtocol: "-1", cidrIpv4: "0.0.0.0/0" }),
        ]);
        assert.deepEqual(v.map((x) => x.message.split(":")[0]), ["fw", "all"]);
    });

    it("open to the world by address math: other spellings, and rules that add up to it on one host", () => {
        const v = rules.rpcOpenToWorld([
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "a-in-1", { ipProtocol: "tcp", fromPort: 8080, toPort: 8080, cidrIpv6: "0::0/0" }),
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "b-in-1", { ipProtocol: "tcp", fromPort: 8080, toPort: 8080, cidrIpv4: "0.0.0.0/1" }, "urn:host-b"),
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "b-in-2", { ipProtocol: "tcp", fromPort: 8080, toPort: 8080, cidrIpv4: "128.0.0.0/1" }, "urn:host-b"),
            // Two halves on two different hosts: neither host is open to the world.
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "c-in-1", { ipProtocol: "tcp", fromPort: 8080, toPort: 8080, cidrIpv4: "0.0.0.0/1" }, "urn:host-c"),
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "d-in-1", { ipProtocol: "tcp", fromPort: 8080, toPort: 8080, cidrIpv4: "128.0.0.0/1" }, "urn:host-d"),
            res("hcloud:index/firewall:Firewall", "e-fw", { rules: [{ direction: "in", protocol: "tcp", port: "56545", sourceIps: ["::ffff:0.0.0.0/96"] }] }),
        ]);
        assert.deepEqual(v.map((x) => x.message.split(":")[0]), ["a-in-1", "b-in-1", "b-in-2", "e-fw"]);
        assert.match(v[1]!.message, /port 8080\/tcp is an RPC\/engine\/admin port and is open to the world by these rules together \(tcp 8080-8080 from 0\.0\.0\.0\/1; tcp 8080-8080 from 128\.0\.0\.0\/1\)/);
        const nft = rules.nftOpenings("ip saddr { 0.0.0.0/1, 128.0.0.0/1 } tcp dport 22 accept\nip6 saddr { 2001:db8::/32 } tcp dport 22 accept");
        assert.deepEqual(nft.map((o) => o.world), [true, false]);
    });

    it("finds key material: hex keys, priv_validator_key.json, PEM; not shorter hashes or enode ids", () => {
        assert.deepEqual(rules.keyMaterial(`K=0x${"ab".repeat(32)}`), ["ab".repeat(32)]);
        assert.equal(rules.keyMaterial(`enode://${"ab".repeat(64)}@1.2.3.4:30303 ${"cd".repeat(8)}`).length, 0);
        assert.equal(rules.keyMaterial(`{"priv_key": {"type": "t", "value": "${"QUJD".repeat(22)}"}}`).length, 1);
    });

    it("the key finder answers what a search for every key in either case answers, however many keys there are", () => {
        const hex = (i: number) => createHash("sha256").update(String(i)).digest("hex");
        const b64 = (i: number) => createHash("sha512").update(String(i)).digest("base64");
        const known = new Set([...Array.from({ length: 500 }, (_, i) => hex(i)), ...Array.from({ length: 500 }, (_, i) => b64(i))]);
        const naive = (text: string) => [...known].some((k) => text.includes(k) || text.toLowerCase().includes(k));
        const find = rules.knownKeyFinder(known);
        const texts = [
            `x${hex(7)}y`, `0x${hex(7).toUpperCase()}`, `"${b64(499)}"`, `ab${b64(3)}cd`, b64(3).toLowerCase(), hex(7).slice(1), `${hex(600)}${hex(601)}`,
            `${hex(600)}${hex(12)}${hex(601)}`, `priv=${b64(9).slice(0, -1)}`, "", "no key here", `${"a".repeat(200)}${hex(1)}`, `${hex(2).slice(0, 32)} ${hex(2).slice(32)}`,
        ];
        for (const t of texts) assert.equal(find(t), naive(t), t);
        assert.deepEqual(texts.map(find), [true, true, true, true, false, false, false, true, false, false, false, true, false]);
        assert.equal(rules.knownKeyFinder(new Set())(hex(1)), false);
    });

    it("key-in-plain-text: a stack's key anywhere but its key step's stdin; a PEM key outside privateKey", () => {
        const key = "cd".repeat(32);
        const v = rules.keyOutsideKeySteps([
            res("command:remote:Command", "fleet-s-miner-key", { stdin: `miner_key=${key}` }),
            res("command:remote:Command", "fleet-s-configure", { stdin: "echo ok", triggers: [`x${key.toUpperCase()}`] }),
            res("aws:ec2/instance:Instance", "i", { userData: "#cloud-config", tags: { a: "b" } }),
            res("command:remote:Command", "fleet-s-health", { connection: { privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\n" } }),
            res("hcloud:index/server:Server", "srv", { userData: "-----BEGIN RSA PRIVATE KEY-----" }),
        ]);
        assert.deepEqual(v.map((x) => x.message.split(":")[0]), ["fleet-s-configure", "srv"]);
    });

    it("key-in-plain-text: a cloud server's first-boot host key passes in its user-data and its key resource; any other key there does not", () => {
        const first = newHostKey("nodefleet-first-boot-h1");
        const other = newHostKey("someone else's");
        const D = "pulumi-nodejs:dynamic:Resource";
        const keyRes = res(D, "fleet-h1-first-boot-key", { host: "h1", publicKey: first.publicKey, privateKey: first.privateKey });
        const ud = (k: string, extra: Record<string, unknown> = {}) => renderCloudConfig({ sshUser: "admin", hostKey: { privateKey: k, publicKey: first.publicKey } }).replace('"ssh_pwauth"', `${Object.entries(extra).map(([a, b]) => `${JSON.stringify(a)}: ${JSON.stringify(b)}, `).join("")}"ssh_pwauth"`);
        const v = rules.keyOutsideKeySteps([
            keyRes,
            res("hcloud:index/server:Server", "fleet-h1-server", { userData: ud(first.privateKey) }),
            res("aws:ec2/instance:Instance", "fleet-h2-instance", { userData: ud(first.privateKey) }),
            // another key in the same place, or the first-boot key beside a second one, or where it was not made for
            res("hcloud:index/server:Server", "fleet-h3-server", { userData: ud(other.privateKey) }),
            res("aws:ec2/instance:Instance", "fleet-h4-instance", { userData: ud(first.privateKey, { write_files: [{ path: "/x", content: other.privateKey }] }) }),
            res(D, "fleet-h5-drift", { privateKey: other.privateKey }),
            res("command:remote:Command", "fleet-h6-configure", { stdin: first.privateKey }),
        ]);
        assert.deepEqual(v.map((x) => x.message.split(":")[0]), ["fleet-h3-server", "fleet-h4-instance", "fleet-h5-drift", "fleet-h6-configure"]);
    });

    it("unpinned-host-key (prod): a connection with no host key is named; a pinned one, or one pinned to a key the run learns (a cloud host's first boot), passes", () => {
        const C = "command:remote:Command";
        const pinned = newHostKey("h").publicKey;
        const rs = [
            res(C, "fleet-h1-bootstrap", { connection: { host: "192.0.2.1", port: 22, hostKey: pinned } }),
            res(C, "fleet-h2-host-key", { connection: { port: 22, hostKey: rules.UNKNOWN_PIN } }),
            res(C, "fleet-h3-bootstrap", { connection: { host: "192.0.2.3", port: 22 } }),
            res(C, "fleet-h4-bootstrap", { connection: { port: 2222 } }),
        ];
        assert.deepEqual(rules.unpinnedHostKey(rs, { requirePinnedHostKeys: true }).map((x) => x.message), [
            "fleet-h3-bootstrap: SSH to 192.0.2.3:22 does not pin the host key (set hosts.<name>.hostKey)",
            "fleet-h4-bootstrap: SSH to (a new host):2222 does not pin the host key (set hosts.<name>.hostKey)",
        ]);
        assert.deepEqual(rules.unpinnedHostKey(rs, {}), []);
    });

    it("same-validator-key and key-in-plain-text read the keys a bundled key step's runner sets (as the pack shows it: runner, then the bundled body)", () => {
        const C = "command:remote:Command";
        const body = "#!/bin/sh\nput /home/x/config/priv_validator_key.json 0600 nodefleet:nodefleet <<NODEFLEET_EOF\n$nodefleet_secret_key\nNODEFLEET_EOF\n";
        const keyStep = (node: string, key: string) => res(C, `fleet-${node}-validator-key`, { stdin: `${bundleRunner(`fleet-${node}-validator-key`, "ab".repeat(32), { key: `${key}\n` })}${body}` }, `fleet-${node}`);
        const key = validatorKeyJson("aa");
        const steps = [keyStep("validator-1", key), keyStep("validator-2", key), keyStep("validator-3", validatorKeyJson("bb"))];
        assert.deepEqual(rules.sameValidatorKey(steps).map((x) => x.message.split(":")[0]), ["fleet-validator-2-validator-key"]);
        // The same key in another step's script (a configure step's runner and body): a leak.
        const leak = res(C, "fleet-validator-3-configure", { stdin: `${bundleRunner("fleet-validator-3-configure", "cd".repeat(32))}echo '${validatorKeyJson("bb")}'\n` });
        assert.deepEqual(rules.keyOutsideKeySteps([...steps, leak]).map((x) => x.message.split(":")[0]), ["fleet-validator-3-configure"]);
    });

    it("hardware-below-target: AWS and Hetzner machine types and volumes against the summed role targets", () => {
        const rs: rules.Planned[] = [];
        const host = (type: string, name: string) => { const h = res(type, name, {}); rs.push(h); return h; };
        const role = (type: string, name: string, hostStep: rules.Planned) => {
            const r = res(type, name, {}); rs.push(r);
            rs.push(res("command:remote:Command", `${name}-configure`, {}, r.urn, [hostStep.urn]));
        };
        const a = host("nodefleet:host:AwsHost", "fleet-a");
        const aStep = res("command:remote:Command", "fleet-a-bootstrap", {}, a.urn); rs.push(aStep);
        rs.push(res("aws:ec2/instance:Instance", "fleet-a-instance", { instanceType: "m6i.2xlarge" }, a.urn));
        rs.push(res("aws:ebs/volume:Volume", "fleet-a-data", { size: 1000 }, a.urn));
        role("nodefleet:role:StorageNode", "fleet-storage-1", aStep);
        role("nodefleet:role:SequencerNode", "fleet-sequencer-1", aStep);
        const h = host("nodefleet:host:HetznerHost", "fleet-h");
        const hStep = res("command:remote:Command", "fleet-h-bootstrap", {}, h.urn); rs.push(hStep);
        rs.push(res("hcloud:index/server:Server", "fleet-h-server", { serverType: "ccx33" }, h.urn));
        rs.push(res("hcloud:index/volume:Volume", "fleet-h-data", { size: 1000 }, h.urn));
        role("nodefleet:role:ValidatorNode", "fleet-validator-1", hStep);
        const v = hardwareBelowTarget(rs, {});
        assert.deepEqual(v.map((x) => x.message), [
            "fleet-a (storage + sequencer): cores: has 8, needs 16 (short by 8)",
            "fleet-a (storage + sequencer): memory: has 32 GB, needs 48 GB (short by 16 GB)",
            "fleet-a (storage + sequencer): data disk: has 1000 GB, needs 1500 GB (short by 500 GB)",
        ]);
        rs.find((r) => r.name === "fleet-h-server")!.props.serverType = "cax41";
        assert.match(hardwareBelowTarget(rs, {}).map((x) => x.message).join("\n"), /fleet-h \(validator\): architecture arm64/);
    });

    it("scripts-unread: a firewall, preflight or key step whose stdin is absent; not one unknown yet, nor other steps", () => {
        const C = "command:remote:Command";
        const v = rules.scriptsUnread([
            res(C, "fleet-h1-firewall-apply", { create: "sudo sh -s" }),
            res(C, "fleet-h1-preflight", { stdin: undefined }),
            res(C, "fleet-validator-1-validator-key", {}),
            res(C, "fleet-storage-1-miner-key", { stdin: "#!/bin/sh" }),
            res(C, "fleet-storage-1-configure", {}),
            res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "h-firewall-apply", {}),
        ]);
        assert.deepEqual(v.map((x) => x.message.split(":")[0]), ["fleet-h1-firewall-apply", "fleet-validator-1-validator-key"]);
        assert.match(v[0]!.message, /cannot check it \(run without --target, from the project the program ran in\)/);
    });

    it("migration-guard-order: s06 must reach both s04 and s05 through its dependencies", () => {
        const node = "urn:node";
        const s04 = res("command:remote:Command", "fleet-v-switch-s04-backup", {}, node);
        const s05 = res("command:remote:Command", "fleet-v-switch-s05-export", {}, node, [s04.urn]);
        const ok = res("command:remote:Command", "fleet-v-switch-s06-delete-geth", {}, node, [s05.urn]);
        assert.deepEqual(rules.migrationGuards([s04, s05, ok]), []);
        const bad = res("command:remote:Command", "fleet-v-switch-s06-delete-geth", {}, node, [s04.urn]);
        assert.deepEqual(rules.migrationGuards([s04, s05, bad]).map((x) => x.message), ["fleet-v-switch-s06-delete-geth deletes the geth datadir but does not depend on fleet-v-switch-s05-export"]);
    });
});
