// Real-CLI tier: a Hetzner-hosted fleet previewed with the real hcloud provider plugin
// (pulumi-resource-hcloud 1.39.1, built from the pinned upstream source by `lab/toolchain.sh
// hcloud`) and a dummy token. What the mock tests cannot show: that the provider accepts every
// input nodefleet gives it (its Check runs on each resource), what it plans with them (defaults it
// adds), and what it warns about. The preview makes no Hetzner API call: the token is a dummy, and
// nothing here can reach the API.
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { PLACEHOLDER_KEY, ROOT, ScratchProject } from "../support/cli";

const DEV_CONFIG = fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
const DUMMY_TOKEN = "0".repeat(64); // a Hetzner API token is 64 characters

/** The dev fleet with its first host (storage-1 and sequencer-1) on Hetzner Cloud. */
function hetznerConfig(): string {
    const existing = /      dev-1:\n        kind: existing\n(?: {8}.*\n)+?(?=      dev-2:)/;
    assert.match(DEV_CONFIG, existing);
    const hetzner = [
        "      dev-1:",
        "        kind: hetzner",
        "        location: fsn1",
        "        serverType: ccx43",
        "        sshKeyName: ops",
        "        sshPrivateKeySecret: hzSshKey",
        "        adminCidrs: [198.51.100.10/32]",
        "",
    ].join("\n");
    return DEV_CONFIG.replace(existing, hetzner);
}

interface Step {
    readonly op: string;
    readonly urn: string;
    readonly newState?: { readonly type: string; readonly inputs: Record<string, any> };
}

describe("a Hetzner host previewed with the real hcloud provider", () => {
    let project: ScratchProject;
    let steps: Step[];
    let diagnostics: { urn?: string; severity: string; message: string }[];
    let output: string;
    let status: number | null;

    before(() => {
        project = new ScratchProject("hztest", hetznerConfig());
        const set = project.pulumi(["config", "set", "--secret", "--stack", "hztest", "nodefleet:hzSshKey"], PLACEHOLDER_KEY); // on stdin
        assert.equal(set.status, 0, set.output);
        project.writeDevFiles("placeholder"); // dev-2 stays an existing host: its key file must exist
        const r = project.exec("pulumi", ["preview", "--stack", "hztest", "--non-interactive", "--json"], { HCLOUD_TOKEN: DUMMY_TOKEN });
        status = r.status;
        output = r.output;
        const json = JSON.parse(r.stdout) as { steps?: Step[]; diagnostics?: typeof diagnostics };
        steps = json.steps ?? [];
        diagnostics = json.diagnostics ?? [];
    });
    after(() => project?.dispose());

    function inputs(type: string): Record<string, any> {
        const found = steps.filter((s) => s.newState?.type === type);
        assert.equal(found.length, 1, `one ${type} planned; the preview said:\n${output.slice(-4000)}`);
        return found[0].newState!.inputs;
    }

    it("plans without error, through the explicit provider at the plugin's version", () => {
        assert.equal(status, 0, output.slice(-6000));
        const provider = steps.find((s) => s.newState?.type === "pulumi:providers:hcloud");
        assert.ok(provider, "the explicit hcloud provider is planned");
        assert.equal(provider.newState!.inputs.version, "1.39.1");
        for (const s of steps.filter((x) => x.newState?.type.startsWith("hcloud:"))) assert.equal(s.op, "create", s.urn);
    });

    it("plans the server with its type, location, image, key, firewall and primary IP", () => {
        const server = inputs("hcloud:index/server:Server");
        assert.equal(server.name, "nodefleet-dev-1");
        assert.equal(server.serverType, "ccx43");
        assert.equal(server.location, "fsn1");
        assert.equal(server.image, "debian-12");
        assert.deepEqual(server.sshKeys, ["ops"]);
        assert.deepEqual(server.labels, { "nodefleet-host": "dev-1" });
    });

    it("plans the firewall with exactly the role ports and SSH from the admin CIDR", () => {
        const fw = inputs("hcloud:index/firewall:Firewall");
        const rules = (fw.rules as any[]).map((r) => `${r.direction} ${r.protocol}/${r.port ?? "-"} ${r.sourceIps.join(",")}`);
        assert.ok(rules.includes("in tcp/22 198.51.100.10/32"), rules.join("\n"));
        assert.ok(!rules.some((r) => /^in tcp\/22 .*0\.0\.0\.0\/0/.test(r)), "SSH open to the world");
        assert.ok(rules.includes("in icmp/- 0.0.0.0/0,::/0"), rules.join("\n"));
        // The sequencer's p2p port, TCP and UDP, to the world; its RPC (8080) only to its allowed CIDRs.
        assert.ok(rules.includes("in tcp/40400 0.0.0.0/0,::/0") && rules.includes("in udp/40400 0.0.0.0/0,::/0"), rules.join("\n"));
    });

    it("plans the primary IP and a protected volume of the data disk's size", () => {
        const ip = inputs("hcloud:index/primaryIp:PrimaryIp");
        assert.equal(ip.type, "ipv4");
        assert.equal(ip.location, "fsn1");
        assert.equal(ip.autoDelete, false);
        const volume = inputs("hcloud:index/volume:Volume");
        assert.equal(volume.location, "fsn1");
        assert.equal(volume.deleteProtection, true);
        assert.ok(volume.size >= 1000, `volume size ${volume.size}`);
        const attach = inputs("hcloud:index/volumeAttachment:VolumeAttachment");
        assert.equal(attach.automount, false);
    });

    it("draws no warning from the provider about nodefleet's inputs", () => {
        // The mocks took `datacenter` (deprecated, removed from Hetzner's API after 1 July 2026) and
        // `assigneeType` without an assigneeId; the real provider warned about both.
        const onHcloud = diagnostics.filter((d) => /[:$]hcloud:/.test(d.urn ?? "") && d.severity !== "info");
        assert.deepEqual(onHcloud.map((d) => `${d.severity}: ${d.message}`), []);
    });
});
