// The port table and the hardware catalog, tested as plain functions.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { rolePorts, ingressRules, listeningPorts } from "../../components/config/ports";
import { prefixed } from "../../components/roles/validator/contract";
import { storageRole } from "../../components/roles/storage/contract";
import { sequencerRole } from "../../components/roles/sequencer/contract";
import { validatorRole } from "../../components/roles/validator/contract";
import { hostTarget, compareToTarget, checkCloudHost, AWS_INSTANCE_TYPES, HETZNER_SERVER_TYPES } from "../../components/config/hardware";
import { parseFleet } from "../../components/config/fleet";
import { baseFleet, secretSource, awsHost, hetznerHost } from "../support/fixtures";
import { MONITORING_SECRETS, monitoredFleet } from "../support/monitoring";

const spec = () => parseFleet(baseFleet(), secretSource()).spec;

describe("port table", () => {
    it("storage: p2p 1234 TCP+UDP public; RPC, admin and gRPC local", () => {
        const ports = rolePorts(spec().nodes[0]).map((p) => `${p.port}/${p.protocol}:${p.exposure.kind}`);
        assert.deepEqual(ports, ["1234/tcp:public", "1234/udp:public", "5678/tcp:local", "5679/tcp:local", "50051/tcp:local"]);
    });

    it("sequencer: 40400 TCP+UDP public, 8080 local unless CIDRs are allowed, admin 8880 local", () => {
        const ports = rolePorts(spec().nodes[1]).map((p) => `${p.port}/${p.protocol}:${p.exposure.kind}`);
        assert.deepEqual(ports, ["40400/tcp:public", "40400/udp:public", "8080/tcp:local", "8880/tcp:local"]);
    });

    it("validator: <prefix>303 TCP+UDP and <prefix>656 public; 545/546/551/657/658/660/661 local (the metrics ports opened to the monitoring host by the monitoring rules alone)", () => {
        const ports = rolePorts(spec().nodes[2]).map((p) => `${p.port}/${p.protocol}:${p.exposure.kind}`);
        assert.deepEqual(ports, ["56303/tcp:public", "56303/udp:public", "56656/tcp:public", "56545/tcp:local", "56546/tcp:local", "56551/tcp:local", "56657/tcp:local", "56658/tcp:local", "56660/tcp:local", "56661/tcp:local"]);
    });

    it("a host's listening ports: its nodes' (local ones too), and with monitoring node_exporter's, on the monitoring host Prometheus's and Alertmanager's, ascending, once each", () => {
        const hosts = parseFleet(monitoredFleet(), secretSource(MONITORING_SECRETS)).hosts;
        const storage = hosts.find((h) => h.name === "h-storage")!, validator = hosts.find((h) => h.name === "h-validator")!;
        assert.deepEqual(listeningPorts(storage.nodes, storage.monitoring), [1234, 5678, 5679, 9090, 9093, 9100, 50051]);
        assert.deepEqual(listeningPorts(validator.nodes, validator.monitoring), [9100, 56303, 56545, 56546, 56551, 56656, 56657, 56658, 56660, 56661]);
        assert.deepEqual(listeningPorts(validator.nodes), [56303, 56545, 56546, 56551, 56656, 56657, 56658, 56660, 56661]);
    });

    it("joins prefix and suffix as text", () => {
        assert.equal(prefixed(5, 545), 5545);
        assert.equal(prefixed(64, 660), 64660);
    });

    it("ingress rules never include a local port, for any role", () => {
        const s = spec();
        for (const node of s.nodes) {
            const host = s.hosts[node.host];
            const open = new Set(ingressRules(host, [node]).map((r) => r.port));
            for (const p of rolePorts(node).filter((x) => x.exposure.kind === "local")) assert.ok(!open.has(p.port), `${node.name}: ${p.port} opened`);
        }
    });

    it("SSH comes first and only from the admin CIDRs", () => {
        const s = spec();
        const rules = ingressRules(s.hosts["h-storage"], [s.nodes[0]]);
        assert.deepEqual(rules[0], { port: 22, protocol: "tcp", sources: ["198.51.100.0/24"], description: "SSH from admin CIDRs" });
        assert.equal(rules.filter((r) => r.port === 22).length, 1);
    });
});

describe("hardware targets", () => {
    it("follow docs/spec.md §8 per role", () => {
        assert.deepEqual([storageRole.baseTarget.cores, storageRole.baseTarget.memoryGb, storageRole.baseTarget.diskGb, storageRole.baseTarget.ssd], [8, 32, 500, true]);
        assert.deepEqual([sequencerRole.baseTarget.cores, sequencerRole.baseTarget.memoryGb, sequencerRole.baseTarget.diskGb], [8, 16, 1000]);
        assert.deepEqual([validatorRole.baseTarget.cores, validatorRole.baseTarget.memoryGb, validatorRole.baseTarget.diskGb], [8, 32, 1000]);
        assert.equal(storageRole.baseTarget.defaultDiskGb, 1000);
    });

    it("name each shortfall with what is there and what is needed", () => {
        const f = compareToTarget({ cores: 4, memoryGb: 16, diskGb: 400, ssd: false, arch: "x86_64" }, storageRole.baseTarget);
        assert.deepEqual(f.map((x) => x.message), [
            "cores: has 4, needs 8 (short by 4)",
            "memory: has 16 GB, needs 32 GB (short by 16 GB)",
            "data disk: has 400 GB, needs 500 GB (short by 100 GB)",
            "data disk: is not solid state, needs an SSD",
        ]);
        assert.deepEqual(compareToTarget({ cores: 8, memoryGb: 32, diskGb: 500, ssd: true, arch: "x86_64" }, storageRole.baseTarget), []);
    });

    it("an unknown cloud type is a finding of its own, never a pass", () => {
        const s = spec();
        const f = checkCloudHost({ ...awsHost(), instanceType: "x1.nope" } as any, [s.nodes[0]]);
        assert.equal(f.length, 1);
        assert.equal(f[0].severity, "unknown");
        const h = checkCloudHost({ ...hetznerHost(), serverType: "cx999" } as any, [s.nodes[0]]);
        assert.equal(h[0].severity, "unknown");
    });

    it("catalog entries used in examples are right", () => {
        assert.deepEqual(AWS_INSTANCE_TYPES["m6i.2xlarge"], { vcpus: 8, memoryGb: 32, arch: "x86_64" });
        assert.deepEqual(AWS_INSTANCE_TYPES["c6i.2xlarge"], { vcpus: 8, memoryGb: 16, arch: "x86_64" });
        assert.deepEqual(HETZNER_SERVER_TYPES["ccx33"], { vcpus: 8, memoryGb: 32, arch: "x86_64" });
        assert.equal(HETZNER_SERVER_TYPES["cax31"].arch, "arm64");
    });

    it("targets of nodes sharing a host add up", () => {
        const s = spec();
        const t = hostTarget(s.nodes);
        assert.deepEqual([t.cores, t.memoryGb, t.diskGb, t.ssd], [24, 80, 2500, true]);
    });
});
