// A cloud host's first boot (components/hosts/first-boot.ts): the host key nodefleet makes, read by
// OpenSSH's own parser; the user-data, checked by Debian's cloud-init schema (lab/cloud-init.sh) and
// read back by the YAML parser cloud-init uses, hostile values included; the scripts, golden and
// shellchecked; and, under strict mocks, the order and pins of a Hetzner and an AWS host's steps.
// What the mocks cannot prove (cloud-init applying the user-data, the swap on a real sshd, a host
// with another key refused) the lab's cloud-init host shows (docs/hosts.md says what is proven where).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { buildStack } from "../support/stack";
import { registered, inputsOf, MADE_HOST_KEY, Recorded } from "../support/mocks";
import { SECRETS, RELEASES, awsHost, hetznerHost, storageNode, secretSource } from "../support/fixtures";
import { parseFleet } from "../../components/config/fleet";
import { golden, requireTool, runTool } from "../support/golden";
import { KEY_NOT_READ, readMadeKey, renderCloudConfig } from "../../components/hosts/first-boot";
import { ed25519PublicKey, makeKeyScript, newHostKey, swapScript } from "../../components/hosts/host-key-provider";

const ROOT = path.resolve(__dirname, "../../..");
const SEED = Buffer.alloc(32, 7);

function scratch(): string {
    return fs.mkdtempSync(path.join(os.tmpdir(), "first-boot-"));
}

/** `cloud-init schema --config-file` of Debian's cloud-init (unpacked by lab/cloud-init.sh). */
function cloudInitSchema(text: string): { status: number | null; output: string } {
    const file = path.join(scratch(), "user-data");
    fs.writeFileSync(file, text);
    return runTool("bash", [path.join(ROOT, "lab/cloud-init.sh"), "schema", file]);
}

/** The document as cloud-init reads it: PyYAML under Debian's python3 (the parser cloud-init uses). */
function yamlLoad(text: string): unknown {
    const r = spawnSync("/usr/bin/python3", ["-c", "import sys, json, yaml; print(json.dumps(yaml.safe_load(sys.stdin.read())))"], { input: text, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout);
}

function shellcheck(file: string) {
    requireTool("shellcheck", "shellcheck");
    const r = runTool("shellcheck", ["--shell=sh", "--severity=style", file]);
    assert.equal(r.status, 0, `shellcheck ${path.basename(file)}:\n${r.output}`);
}

describe("first boot: the host key nodefleet makes", () => {
    it("is an ed25519 key in OpenSSH's format: ssh-keygen derives the same public key from it, and a second key differs", () => {
        requireTool("ssh-keygen", "openssh-client");
        const keys = [newHostKey("nodefleet-first-boot-h1"), newHostKey("nodefleet-first-boot-h1")];
        for (const k of keys) {
            const file = path.join(scratch(), "key");
            fs.writeFileSync(file, k.privateKey, { mode: 0o600 });
            const r = spawnSync("ssh-keygen", ["-y", "-f", file], { encoding: "utf8" });
            assert.equal(r.status, 0, r.stderr);
            assert.equal(r.stdout.trim().split(" ").slice(0, 2).join(" "), k.publicKey);
            assert.equal(ed25519PublicKey(k.publicKey), k.publicKey);
        }
        assert.notEqual(keys[0]!.publicKey, keys[1]!.publicKey);
        assert.notEqual(keys[0]!.privateKey, keys[1]!.privateKey);
    });

    it("reads a host's answer as an ed25519 public key only: another type, a damaged blob or anything after it is refused", () => {
        const k = newHostKey("x", SEED).publicKey;
        assert.equal(ed25519PublicKey(`${k} root@host\n`), k);
        for (const bad of [
            "",
            "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7",
            k.slice(0, -4),
            `${k.slice(0, -2)}!!`,
            `ssh-ed25519 ${Buffer.alloc(51, 1).toString("base64")}`,
            `${k}\nssh-ed25519 ${k}`.replace(" ", "\t").replace("ssh-ed25519\t", "ssh-ed25519x "),
            `'; rm -rf / #`,
        ]) {
            assert.equal(ed25519PublicKey(bad), undefined, JSON.stringify(bad));
        }
    });
});

describe("first boot: the key the host says it made", () => {
    it("is read from the key step's JSON line; a step not run yet pins a key nothing matches; any other answer is refused, naming the host", () => {
        const k = newHostKey("made", SEED).publicKey;
        assert.equal(readMadeKey("h1", `noise\n{"hostKey":"${k} root@h1"}\n`), k);
        for (const out of [undefined, ""]) assert.equal(readMadeKey("h1", out), KEY_NOT_READ);
        assert.equal(ed25519PublicKey(KEY_NOT_READ), undefined, "never a key a host could present");
        for (const out of ["{}", "not json", `{"hostKey":"ssh-rsa AAAAB3NzaC1yc2E"}`, `{"hostKey":"${k}\nssh-ed25519 x"}`, `{"hostKey":5}`]) {
            assert.throws(() => readMadeKey("h1", out), /hosts\.h1: the host did not answer an ed25519 host key when asked to make one; nothing more runs on it/, out);
        }
    });
});

describe("first boot: the user-data", () => {
    for (const sshUser of ["admin", "root"]) {
        it(`for login user ${sshUser}: matches its golden copy, passes cloud-init's own schema and reads back as meant`, () => {
            const key = newHostKey("nodefleet-first-boot-h1", SEED);
            const text = renderCloudConfig({ sshUser, hostKey: key });
            golden(`first-boot/user-data-${sshUser}.yaml`, text);
            const r = cloudInitSchema(text);
            assert.equal(r.status, 0, r.output);
            assert.match(r.output, /Valid cloud-config/);
            const doc = yamlLoad(text) as Record<string, any>;
            assert.deepEqual(doc.ssh_keys, { ed25519_private: key.privateKey, ed25519_public: key.publicKey });
            assert.equal(doc.ssh_deletekeys, true);
            assert.equal(doc.ssh_pwauth, false);
            assert.equal(doc.ssh_genkeytypes, undefined, "no other host key is made: the given one is the only one");
            if (sshUser === "root") {
                assert.equal(doc.disable_root, false);
                assert.equal(doc.users, undefined);
            } else {
                assert.equal(doc.disable_root, true);
                assert.deepEqual(doc.users, ["default"]);
                assert.deepEqual(doc.system_info.default_user, { name: "admin", lock_passwd: true, gecos: "nodefleet", sudo: "ALL=(ALL) NOPASSWD:ALL", shell: "/bin/bash" });
            }
        });
    }

    it("a schema that is not cloud-init's is refused by the same check (it can fail)", () => {
        const r = cloudInitSchema('#cloud-config\n{"ssh_genkeytypes": [], "users": 5}\n');
        assert.notEqual(r.status, 0);
        assert.match(r.output, /ssh_genkeytypes: \[\] is too short/);
    });

    it("hostile values stay values: a user name that tries to add YAML keys reads back as that one string", () => {
        // The config refuses such a name (unixUser); rendered anyway, it must not become a key of its own.
        const key = newHostKey("k", SEED);
        for (const sshUser of ['admin"\nruncmd: [touch /tmp/pwned]\n#', "admin\u2028runcmd: x", "a: b", "{{user}}", "admin'; touch /x; '", "- x"]) {
            const text = renderCloudConfig({ sshUser, hostKey: key });
            const doc = yamlLoad(text) as Record<string, any>;
            assert.deepEqual(Object.keys(doc).sort(), ["disable_root", "ssh_deletekeys", "ssh_keys", "ssh_pwauth", "system_info", "users"]);
            assert.equal(doc.system_info.default_user.name, sshUser);
            assert.equal(doc.runcmd, undefined);
        }
    });
});

describe("first boot: the host's scripts", () => {
    it("the key script and the swap script match their golden copies and pass shellcheck; the swap quotes the key it swaps to", () => {
        shellcheck(golden("first-boot/host-key-make.sh", makeKeyScript("h1")));
        const key = newHostKey("k", SEED).publicKey;
        shellcheck(golden("first-boot/host-key-swap.sh", swapScript("h1", key)));
        assert.match(swapScript("h1", key), new RegExp(`^want='${key.replace(/[+/]/g, (c) => `\\${c}`)}'$`, "m"));
    });
});

function byName(recorded: Recorded[], name: string): Recorded {
    const r = recorded.find((x) => x.name === name);
    assert.ok(r, `no resource ${name}; have ${recorded.map((x) => x.name).join(", ")}`);
    return r;
}

function single(host: unknown) {
    return { hosts: { h1: host }, nodes: [{ ...storageNode(), host: "h1" }], releases: { zgs: RELEASES().zgs } };
}

for (const [kind, spec, server] of [["Hetzner", hetznerHost, "fleet-h1-server"], ["AWS", awsHost, "fleet-h1-instance"]] as const) {
    describe(`first boot under strict mocks: a ${kind} host`, () => {
        it("hands the server a first-boot key in its user-data (a secret), pins it for one step that has the host make its key, swaps, then pins the key the host made everywhere", async () => {
            const { recorded, fleet } = await buildStack(single(spec()), SECRETS);
            const key = registered.find((r) => r.name === "fleet-h1-first-boot-key")!;
            assert.ok(key, "a first-boot key");
            const made = registered.find((r) => r.type === "pulumi-nodejs:dynamic:Resource" && r.name === "fleet-h1-first-boot-key");
            assert.ok(made);
            const userData = inputsOf(server).userData as string;
            assert.ok(registered.find((r) => r.name === server)!.secretPaths.includes("userData"), "the user-data is a secret");
            const doc = JSON.parse(userData.slice("#cloud-config\n".length));
            const firstBoot = doc.ssh_keys.ed25519_public as string;
            assert.equal(ed25519PublicKey(firstBoot), firstBoot);
            assert.deepEqual(byName(recorded, server).ignoreChanges?.includes("userData"), true, "user-data never replaces a server");
            // The one step over the first-boot key: it runs once, after the server.
            const step = inputsOf("fleet-h1-host-key");
            assert.equal(step.connection.hostKey, firstBoot);
            assert.match(step.stdin, /ssh-keygen -q -t ed25519 -N '' -C nodefleet-h1/);
            assert.ok(byName(recorded, "fleet-h1-host-key").dependsOn.includes(server));
            assert.deepEqual(byName(recorded, "fleet-h1-host-key").ignoreChanges, ["connection", "create", "stdin"]);
            // The swap accepts either key and is told which one the host made.
            const swap = inputsOf("fleet-h1-host-key-swap");
            assert.deepEqual([swap.host, swap.firstBootKey, swap.hostKey], ["h1", firstBoot, MADE_HOST_KEY]);
            assert.ok(registered.find((r) => r.name === "fleet-h1-host-key-swap")!.secretPaths.includes("connection"));
            assert.deepEqual(byName(recorded, "fleet-h1-host-key-swap").dependsOn, ["fleet-h1-host-key"]);
            assert.ok(byName(recorded, "fleet-h1-data-volume").dependsOn.includes("fleet-h1-host-key-swap"));
            // Every other step, the host's and its node's, pins the key the host made.
            const others = registered.filter((r) => r.type.startsWith("command:remote:") && r.name !== "fleet-h1-host-key");
            assert.ok(others.length >= 8);
            for (const r of others) assert.equal(r.inputs.connection?.hostKey, MADE_HOST_KEY, r.name);
            assert.equal(inputsOf("fleet-h1-drift").connection.hostKey, MADE_HOST_KEY);
            // The stack's hosts output gives `nodefleet status` the key to pin.
            const learned = await new Promise((resolve) => fleet.summary.h1!.hostKey!.apply(resolve));
            assert.equal(learned, MADE_HOST_KEY);
        });

        it("with the key of a server made before first-boot keys given (hostKey): no user-data, no key step, that key pinned everywhere", async () => {
            const given = newHostKey("given", SEED).publicKey;
            const { fleet } = await buildStack(single({ ...spec(), hostKey: given }), SECRETS);
            assert.equal(fleet.summary.h1!.hostKey, undefined, "the config pins it: no key learned");
            assert.equal(inputsOf(server).userData, undefined);
            for (const name of ["fleet-h1-first-boot-key", "fleet-h1-host-key", "fleet-h1-host-key-swap"]) assert.equal(registered.find((r) => r.name === name), undefined, name);
            for (const r of registered.filter((x) => x.type.startsWith("command:remote:"))) assert.equal(r.inputs.connection?.hostKey, given, r.name);
        });
    });
}

describe("first boot under strict mocks: an existing server booted with nodefleet's user-data (firstBoot: cloud-init)", () => {
    const existing = () => ({ kind: "existing", address: "192.0.2.30", user: "admin", firstBoot: "cloud-init", sshPrivateKeySecret: "sshKey", adminCidrs: ["198.51.100.0/24"] });

    it("gives the user-data as a stack output, pins the first-boot key for the key step alone, and runs the preflight after the swap, pinned to the key the host made", async () => {
        const { recorded } = await buildStack(single(existing()), SECRETS);
        const step = inputsOf("fleet-h1-host-key");
        const key = registered.find((r) => r.name === "fleet-h1-first-boot-key")!;
        assert.ok(key);
        assert.equal(step.connection.host, "192.0.2.30");
        assert.equal(step.create, "sudo -n /bin/sh -s");
        assert.deepEqual(byName(recorded, "fleet-h1-host-key-swap").dependsOn, ["fleet-h1-host-key"]);
        assert.deepEqual(byName(recorded, "fleet-h1-tools").dependsOn, ["fleet-h1-host-key-swap"]);
        for (const r of registered.filter((x) => x.type.startsWith("command:remote:") && x.name !== "fleet-h1-host-key")) assert.equal(r.inputs.connection?.hostKey, MADE_HOST_KEY, r.name);
        assert.equal(ed25519PublicKey(step.connection.hostKey), step.connection.hostKey);
        assert.notEqual(step.connection.hostKey, MADE_HOST_KEY);
    });

    it("is refused with a hostKey beside it, naming the field; without either the host is warned about, with firstBoot it is not", () => {
        const base = single(existing());
        const given = newHostKey("given", SEED).publicKey;
        assert.throws(() => parseFleet({ ...base, hosts: { h1: { ...existing(), hostKey: given } } }, secretSource()), /hosts\.h1\.firstBoot: give hostKey \(a server whose key you know\) or firstBoot \(a server booted with nodefleet's user-data\), not both/);
        assert.deepEqual(parseFleet(base, secretSource()).warnings, []);
        const { firstBoot: _f, ...unpinned } = existing();
        assert.deepEqual(parseFleet({ ...base, hosts: { h1: unpinned } }, secretSource()).warnings, ["hosts.h1.hostKey: not pinned; the first key the host presents is accepted"]);
        assert.throws(() => parseFleet({ ...base, hosts: { h1: { ...existing(), firstBoot: "ignition" } } }, secretSource()), /hosts\.h1\.firstBoot/);
    });
});
