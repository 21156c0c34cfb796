// `nodefleet status` through the real Automation API and the real pulumi CLI on a throwaway stack
// (no deployment: existing hosts, their addresses from the config): the stack's config read and
// checked, the SSH keys decrypted from secret config (not used here: each connection is refused first), every host tried with the real ssh client
// (here each refuses: port 1 of loopback addresses), the JSON report and the exit status. A config
// `up` would refuse stops status too, naming the path. What it cannot prove: a host answering
// (the E2E tier runs status on the dev VMs).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT, ScratchProject } from "../support/cli";
import { baseFleet, SECRETS } from "../support/fixtures";

const MAIN = path.join(ROOT, "dist", "status", "main.js");

function config(fleet: unknown): string {
    return `config:\n  nodefleet:fleet: ${JSON.stringify(fleet)}\n`;
}

describe("nodefleet status with the real Automation API", () => {
    let project: ScratchProject;
    const fleet = baseFleet();
    (Object.values(fleet.hosts) as { address: string; port: number }[]).forEach((host, i) => {
        host.address = `127.0.0.${i + 1}`;
        host.port = 1; // nothing listens: ssh is refused at once
    });

    before(() => {
        project = new ScratchProject("statustest", config(fleet));
        for (const [key, value] of Object.entries(SECRETS)) {
            const r = project.pulumi(["config", "set", "--secret", "--stack", "statustest", `nodefleet:${key}`], value); // on stdin, off every command line
            assert.equal(r.status, 0, r.output);
        }
    });
    after(() => project?.dispose());

    it("reads the stack and its secret SSH keys, tries every host with the real ssh client, reports each node unreachable: exit 1, no secret printed", () => {
        const r = project.exec("node", [MAIN, "status", "--stack", "statustest", "--json", "--timeout", "20"]);
        assert.equal(r.status, 1, r.output);
        const report = JSON.parse(r.stdout);
        assert.equal(report.stack, "statustest");
        assert.equal(report.healthy, false);
        assert.deepEqual(report.nodes.map((n: any) => [n.node, n.host, n.service, n.diagnoses.map((d: any) => d.fault)]), [
            ["sequencer-1", "h-sequencer", "unreachable", ["host-unreachable"]],
            ["storage-1", "h-storage", "unreachable", ["host-unreachable"]],
            ["validator-1", "h-validator", "unreachable", ["host-unreachable"]],
        ]);
        for (const n of report.nodes) assert.match(n.diagnoses[0].detail, /ssh: connect to host 127\.0\.0\.[123] port 1: Connection refused/);
        assert.match(r.output, /nodefleet status: stack statustest, 3 host\(s\), read in [0-9.]+ s/);
        for (const secret of Object.values(SECRETS)) assert.ok(!r.output.includes(secret), "a secret was printed");
    });

    it("Ctrl-C during --watch removes the round's decrypted keys before it exits", async () => {
        // A host that accepts the connection and never says a word: the round waits on it.
        const silent = net.createServer(() => undefined);
        await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
        const hanging = JSON.parse(JSON.stringify(fleet));
        hanging.hosts["h-storage"].address = "127.0.0.1";
        hanging.hosts["h-storage"].port = (silent.address() as net.AddressInfo).port;
        const yaml = fs.readFileSync(path.join(project.dir, "Pulumi.statustest.yaml"), "utf8");
        project.writeConfig(yaml.replace(/^  nodefleet:fleet: .*$/m, `  nodefleet:fleet: ${JSON.stringify(hanging)}`));
        const before = new Set(fs.readdirSync(os.tmpdir()).filter((d) => d.startsWith("nodefleet-status-")));
        const child = project.start("node", [MAIN, "status", "--stack", "statustest", "--watch", "5", "--timeout", "60"]);
        const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
        try {
            let dir: string | undefined;
            const deadline = Date.now() + 60_000;
            while (dir === undefined && Date.now() < deadline) {
                await new Promise((r) => setTimeout(r, 100));
                dir = fs.readdirSync(os.tmpdir()).find((d) => d.startsWith("nodefleet-status-") && !before.has(d) && fs.existsSync(path.join(os.tmpdir(), d, "h-storage.key")));
            }
            assert.ok(dir !== undefined, "no round with a key file seen");
            child.kill("SIGINT");
            assert.equal(await exited, 130);
            assert.ok(!fs.existsSync(path.join(os.tmpdir(), dir)), `${dir} is left with a decrypted key`);
        } finally {
            child.kill("SIGKILL");
            silent.close();
            project.writeConfig(yaml);
        }
    });

    it("from a monitoring box: decrypts only the SSH keys (a node key it cannot decrypt does not matter) and a missing release file is a warning", () => {
        // The node keys' ciphertexts replaced by ones no passphrase opens: `pulumi config
        // --show-secrets` (what getAllConfig runs) fails on them; status never asks for them.
        const yaml = fs.readFileSync(path.join(project.dir, "Pulumi.statustest.yaml"), "utf8");
        const withSums = JSON.parse(JSON.stringify(fleet));
        withSums.releases.zgs = { url: withSums.releases.zgs.url, sha256File: "/nonexistent/SHA256SUMS" };
        let broken = yaml.replace(/^  nodefleet:fleet: .*$/m, `  nodefleet:fleet: ${JSON.stringify(withSums)}`);
        for (const key of ["minerKey", "sequencerKey", "validatorKey", "validatorKey2", "blsKey"]) {
            broken = broken.replace(new RegExp(`(  nodefleet:${key}:\\n    secure: )v1:[^\\n]+`), "$1v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
        }
        assert.notEqual(broken, yaml);
        project.writeConfig(broken);
        try {
            const all = project.pulumi(["config", "--json", "--show-secrets", "--stack", "statustest"]);
            assert.notEqual(all.status, 0, "the broken ciphertexts are refused by a full decryption");
            const r = project.exec("node", [MAIN, "status", "--stack", "statustest", "--json", "--timeout", "20"]);
            assert.equal(r.status, 1, r.output); // the hosts refuse: read, then unreachable
            assert.equal(JSON.parse(r.stdout).nodes.length, 3);
            assert.match(r.output, /warning: releases\.zgs\.sha256File: \/nonexistent\/SHA256SUMS: cannot be read on this machine \(only pulumi up needs it\)/);
            assert.doesNotMatch(r.output, /cannot read the stack/);
        } finally {
            project.writeConfig(yaml);
        }
    });

    it("a config that `pulumi up` would refuse stops status with the path and exit 2", () => {
        const bad = JSON.parse(JSON.stringify(fleet));
        bad.nodes[0].host = "nowhere";
        project.writeConfig(config(bad));
        try {
            const r = project.exec("node", [MAIN, "status", "--stack", "statustest"]);
            assert.equal(r.status, 2, r.output);
            assert.match(r.output, /cannot read the stack: invalid nodefleet:fleet config:[\s\S]*nodes\[0\]\.host/);
            assert.equal(r.stdout, "");
        } finally {
            project.writeConfig(config(fleet));
        }
    });
});
