// A cloud host's first boot on the lab (docs/hosts.md), on a stack of its own beside the dev stack's
// scenarios (test/e2e/first-boot.test.ts): a fleet of servers booted with nodefleet's user-data
// (existing hosts with `firstBoot: cloud-init`, the path Hetzner and AWS hosts take once their server
// exists). dev-3 comes first: a first `up` targets its first-boot key alone, the stack output gives
// the user-data, and the lab boots dev-3 as a cloud boots a server (lab/vm.sh boot-cloud: Debian's
// cloud-init, a NoCloud seed of that user-data, the lab's key as the datasource's public key). It
// must present the first-boot key and have the admin user with sudo; then the full `up`: the host
// makes its own key, the swap, and a storage node's first up, every step after the swap pinned to
// the new key, which the host then presents alone. dev-4, booted with user-data of another key, is
// refused at its first step, naming it, and nothing of nodefleet's reaches it. A destroy then takes
// the stack away from the cloud-init host.
// What the lab cannot show: the cloud's API creating the server and attaching its volume (no cloud
// account here; the data-volume script runs only on Hetzner and AWS hosts: it stays unproven on a
// host, its script golden and shellchecked in the unit tier), and the cloud's own injection of the
// key named by sshKeyName (the NoCloud meta-data's public key stands in for it).
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT, failureOf, sh } from "../support/cli";
import type { Steps } from "../support/steps";
import { DEV, onVm, previewNoChangesWith, stackOutput, storageLike, timed, upWith, VM } from "../support/lab";
import { renderCloudConfig } from "../../components/hosts/first-boot";
import { ed25519PublicKey, newHostKey } from "../../components/hosts/host-key-provider";

const FLEET = "urn:pulumi:dev::nodefleet::nodefleet:fleet:Fleet::fleet";
const PREFIX = "urn:pulumi:dev::nodefleet::nodefleet:fleet:Fleet$nodefleet:host:ExistingHost";

/** A host booted with nodefleet's user-data, on the lab's nat network at 10.0.2.1N. */
function cloudHost(vm: string): string {
    const n = vm.slice("dev-".length);
    return `      ${vm}:\n        kind: existing\n        address: 10.0.2.1${n}\n        user: admin\n        firstBoot: cloud-init\n        sshPrivateKeyFile: .state/vm/id_ed25519\n        adminCidrs: [10.0.2.2/32]\n`;
}

/** Where the dev config's `key:` at `indent` spaces begins, and where its block ends (the next line indented no deeper). */
function block(yaml: string, key: string, indent: number): [number, number] {
    const start = yaml.indexOf(`\n${" ".repeat(indent)}${key}:\n`) + 1;
    assert.ok(start > 0, `the dev config's ${key}`);
    const body = start + indent + key.length + 2;
    const next = new RegExp(`^ {0,${indent}}\\S`, "m").exec(yaml.slice(body));
    return [start, next ? body + next.index : yaml.length];
}

/**
 * The dev config as a fleet of the cloud-init hosts `vms` alone, with storage-4 on dev-3 (made from
 * storage-1's entry: a miner key of its own, its lab address): its zgs release, secrets and dev
 * chain are the dev stack's; no host, node or other release of the dev stack's is in it.
 */
export function cloudFleet(yaml: string, vms: readonly string[]): string {
    const [z0, z1] = block(yaml, "zgs", 6);
    const [r0, r1] = block(yaml, "releases", 4);
    const releases = `${yaml.slice(0, r0)}    releases:\n${yaml.slice(z0, z1)}${yaml.slice(r1)}`;
    const [h0, h1] = block(releases, "hosts", 4);
    const hosts = `${releases.slice(0, h0)}    hosts:\n${vms.map(cloudHost).join("")}${releases.slice(h1)}`;
    const [n0, n1] = block(hosts, "nodes", 4);
    const storage4 = storageLike(hosts, { name: "storage-4", host: "dev-3", enr: "10.77.0.13", minerKeySecret: "devMinerKey4" });
    return `${hosts.slice(0, n0)}    nodes:\n${storage4}${hosts.slice(n1)}`;
}

/** The host's ed25519 key as it presents it to a client (ssh-keyscan from the runner). */
function presented(vm: string): string {
    const r = sh("ssh-keyscan", ["-T", "10", "-t", "ed25519", `10.0.2.1${vm.slice("dev-".length)}`], { allowFail: true });
    const line = r.stdout.split("\n").find((l) => l.includes("ssh-ed25519")) ?? "";
    return line.split(" ").slice(1, 3).join(" ");
}

/** The first-boot user-data the stack gives for a host, written where the lab reads it (0600). */
function userDataFile(vm: string): { file: string; firstBootKey: string } {
    const r = sh("bash", [DEV, "pulumi", "stack", "output", "firstBootUserData", "--json", "--show-secrets", "--stack", "dev"]);
    const text = (JSON.parse(r.stdout) as Record<string, string>)[vm];
    assert.ok(text?.startsWith("#cloud-config\n"), `the stack's firstBootUserData.${vm}`);
    const file = path.join(ROOT, ".state", `e2e-${vm}-user-data`);
    fs.writeFileSync(file, text, { mode: 0o600 });
    const firstBootKey = (JSON.parse(text.slice("#cloud-config\n".length)) as { ssh_keys: { ed25519_public: string } }).ssh_keys.ed25519_public;
    return { file, firstBootKey };
}

/** A value of `pulumi stack export --show-secrets`: a secret's plaintext (JSON), or the value as it is. */
function plain<T>(v: unknown): T | undefined {
    if (v !== null && typeof v === "object" && "plaintext" in v) return JSON.parse(String((v as { plaintext: unknown }).plaintext)) as T;
    return v as T | undefined;
}

/** What a stack resource holds after the last up (its outputs), by its name. */
function stateOutputs(name: string): Record<string, unknown> {
    const r = sh("bash", [DEV, "pulumi", "stack", "export", "--stack", "dev"], { timeoutMs: 120_000 });
    const deployment = JSON.parse(r.stdout) as { deployment: { resources: { urn: string; outputs?: Record<string, unknown> }[] } };
    const found = deployment.deployment.resources.find((x) => x.urn.endsWith(`::${name}`));
    assert.ok(found, `${name} in the state`);
    return found.outputs ?? {};
}

/** The first up of a host that is not booted yet: its component and first-boot key (and the fleet's, on a new stack), nothing else. */
function targetFirstBootKey(edit: (y: string) => string, vm: string) {
    return upWith(edit, ["--target", FLEET, "--target", `${PREFIX}::fleet-${vm}`, "--target", `${PREFIX}$pulumi-nodejs:dynamic:Resource::fleet-${vm}-first-boot-key`]);
}

export function firstBootScenario(steps: Steps): void {
    let made = "";
    const one = (y: string) => cloudFleet(y, ["dev-3"]);
    const two = (y: string) => cloudFleet(y, ["dev-3", "dev-4"]);

    steps.test("a server booted with nodefleet's cloud-init user-data presents its first-boot key, then takes its first up: its own key, the swap, a storage node, every step pinned", { timeout: 20 * 60_000 }, () => {
        const key = timed("pulumi up --target dev-3's first-boot key", () => targetFirstBootKey(one, "dev-3"));
        assert.equal(key.status, 0, failureOf(key.output));
        const { file, firstBootKey } = userDataFile("dev-3");
        assert.equal(ed25519PublicKey(firstBootKey), firstBootKey);
        timed("lab/vm.sh boot-cloud dev-3 (cloud-init's first boot)", () => sh("bash", [VM, "boot-cloud", "dev-3", file, "admin"], { timeoutMs: 600_000 }));
        // cloud-init applied the user-data: the first-boot key is the only key shown, the admin user has sudo.
        assert.equal(presented("dev-3"), firstBootKey);
        const admin = onVm("dev-3", "id -nG; sudo -n true && echo sudo-ok; sudo -n ls /etc/ssh | grep -c '^ssh_host_.*_key$'");
        assert.match(admin.output, /\bsudo-ok\b/, admin.output);
        assert.equal(admin.output.trim().split("\n").pop(), "1", "one host key: the first-boot key");

        const up = timed("pulumi up: dev-3's first up", () => upWith(one));
        assert.equal(up.status, 0, failureOf(up.output));
        assert.match(up.output, /fleet-dev-3-host-key-swap/);
        made = String(stateOutputs("fleet-dev-3-host-key-swap").hostKey ?? "");
        assert.equal(ed25519PublicKey(made), made, "the swap's key is the one the host made");
        assert.notEqual(made, firstBootKey);
        // The host presents the key it made, alone; the first-boot key's files are gone.
        assert.equal(presented("dev-3"), made);
        const files = onVm("dev-3", "sudo -n sh -c 'ls /etc/ssh/ssh_host_ed25519_key 2>&1; cat /etc/ssh/sshd_config.d/10-nodefleet-host-key.conf; stat -c %a /etc/ssh/nodefleet/host_ed25519_key'", true);
        assert.match(files.output, /No such file/);
        assert.match(files.output, /^HostKey \/etc\/ssh\/nodefleet\/host_ed25519_key$/m);
        assert.match(files.output, /^600$/m);
        // Every step of dev-3 in the state pins the key the host made, but the one step over the first-boot key.
        const state = JSON.parse(sh("bash", [DEV, "pulumi", "stack", "export", "--stack", "dev", "--show-secrets"], { timeoutMs: 120_000 }).stdout) as { deployment: { resources: { urn: string; type: string; inputs?: { connection?: unknown } }[] } };
        const steps3 = state.deployment.resources.filter((x) => x.type.startsWith("command:remote:") && /::fleet-(dev-3|storage-4)-/.test(x.urn));
        assert.ok(steps3.length >= 8, `dev-3's steps: ${steps3.length}`);
        for (const s of steps3) assert.equal(plain<{ hostKey?: string }>(s.inputs?.connection)?.hostKey, s.urn.endsWith("::fleet-dev-3-host-key") ? firstBootKey : made, s.urn);
        // The role's first up on it: the storage node runs.
        assert.equal(onVm("dev-3", "systemctl is-active zgs-storage-4.service", true).output.trim(), "active");
        // Its health step read it over the pinned connection: the node runs and reads one of its endpoints.
        const health = stackOutput("health")["storage-4"];
        assert.equal(health?.active, true, JSON.stringify(health));
        assert.match(String(health?.endpoint), /^http:\/\/10\.0\.2\.2:854[56]$/, JSON.stringify(health));
    });

    steps.test("a second up changes nothing on the cloud-init host (no step runs again over the first-boot key)", {}, () => {
        const r = timed("pulumi preview --expect-no-changes", () => previewNoChangesWith(one));
        assert.equal(r.status, 0, failureOf(r.output));
    });

    steps.test("a host that presents another key than its first-boot key is refused at its first step, named, and nothing of nodefleet's reaches it", { timeout: 15 * 60_000 }, () => {
        const key = timed("pulumi up --target dev-4's first-boot key", () => targetFirstBootKey(two, "dev-4"));
        assert.equal(key.status, 0, failureOf(key.output));
        const { firstBootKey } = userDataFile("dev-4");
        // dev-4 boots with user-data whose key is not the one nodefleet made for it.
        const other = newHostKey("not nodefleet's");
        const file = path.join(ROOT, ".state", "e2e-dev-4-other-user-data");
        fs.writeFileSync(file, renderCloudConfig({ sshUser: "admin", hostKey: other }), { mode: 0o600 });
        sh("bash", [VM, "boot-cloud", "dev-4", file, "admin"], { timeoutMs: 600_000 });
        assert.equal(presented("dev-4"), other.publicKey);
        assert.notEqual(other.publicKey, firstBootKey);
        const up = timed("pulumi up with dev-4 presenting another key", () => upWith(two));
        assert.notEqual(up.status, 0, "the up must fail");
        assert.match(up.output, /fleet-dev-4-host-key/);
        assert.match(up.output, /host key mismatch|handshake failed/i);
        const left = onVm("dev-4", "sudo -n sh -c 'ls -d /etc/ssh/nodefleet /var/lib/nodefleet /opt/nodefleet /etc/nodefleet 2>/dev/null; ls ~admin/.nodefleet 2>/dev/null; true'", true);
        assert.equal(left.output.trim(), "", `nothing of nodefleet's on dev-4:\n${left.output}`);
        // dev-3 was not touched by the failed run.
        assert.equal(presented("dev-3"), made);
    });

    steps.test("pulumi destroy takes nodefleet off the cloud-init host and keeps its data", { timeout: 15 * 60_000 }, () => {
        const r = timed("pulumi destroy", () => sh("bash", [DEV, "pulumi", "destroy", "--stack", "dev", "--yes", "--skip-preview", "--non-interactive"], { allowFail: true, timeoutMs: 600_000 }));
        assert.equal(r.status, 0, failureOf(r.output));
        const left = onVm("dev-3", "sudo -n sh -c 'systemctl list-unit-files zgs-storage-4.service --no-legend | grep -q . && echo unit-present; nft list table inet nodefleet >/dev/null 2>&1 && echo table-present; ls -d /data/storage-4'", true);
        assert.doesNotMatch(left.output, /present/, left.output);
        assert.match(left.output, /^\/data\/storage-4$/m, "the chain data directory is kept");
        const state = sh("bash", [DEV, "pulumi", "stack", "export", "--stack", "dev"], { timeoutMs: 120_000 }).stdout;
        assert.equal(state.includes("fleet-dev-3"), false, "nothing of dev-3 left in the stack");
        for (const vm of ["dev-3", "dev-4"]) assert.match(sh("bash", [VM, "stop", vm], { timeoutMs: 120_000 }).output, new RegExp(`${vm}: powered off`));
    });
}
