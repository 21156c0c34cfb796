// Rendered host files: golden copies, each checked by its real tool (nft -c,
// shellcheck, systemd-analyze verify), and the quoting helpers attacked with hostile values.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseFleet } from "../../components/config/fleet";
import { renderFirewallScripts, renderBootstrap, renderPreflight, renderDataVolume, renderReservedPortsUnit } from "../../components/hosts/scripts";
import { renderFirewallUnit } from "../../components/hosts/firewall";
import { hostTarget } from "../../components/config/hardware";
import { shellWord, tomlString, render } from "../../components/base/render";
import { golden, requireTool, runTool, sh } from "../support/golden";
import { baseFleet, secretSource, SECRETS } from "../support/fixtures";

function plans() {
    const f = baseFleet();
    // A fourth host carrying two roles, with IPv6 admin access and a restricted sequencer RPC.
    f.hosts["h-shared"] = { ...f.hosts["h-validator"], address: "192.0.2.20", sshdPort: 2200, adminCidrs: ["198.51.100.0/24", "2001:db8::/48"] };
    f.nodes.push({ ...f.nodes[1], name: "sequencer-2", host: "h-shared", sequencer: { ...f.nodes[1].sequencer, rpcAllowedCidrs: ["10.0.0.0/8"], validatorAddress: "0x1563915e194D8CfBA1943570603F7606A3115508", validatorPrivateKeySecret: "sequencerKey2" } });
    f.nodes.push({ ...f.nodes[2], name: "validator-2", host: "h-shared", validator: { ...f.nodes[2].validator, portPrefix: 47, validatorKeySecret: "validatorKey2" } });
    const secrets = secretSource({ ...SECRETS, sequencerKey2: "0x" + "22".repeat(32) });
    return parseFleet(f, secrets).hosts;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-render-"));

function shellcheck(file: string) {
    requireTool("shellcheck", "shellcheck");
    const r = runTool("shellcheck", ["--shell=sh", "--severity=style", file]);
    assert.equal(r.status, 0, `shellcheck ${path.basename(file)}:\n${r.output}`);
}

describe("rendered host files", () => {
    for (const plan of plans()) {
        it(`nftables ruleset for ${plan.name} matches its golden copy and passes nft -c`, () => {
            requireTool("nft", "nftables");
            const fw = renderFirewallScripts(plan);
            const file = golden(`firewall/${plan.name}.nft`, fw.ruleset);
            const r = runTool("nft", ["-c", "-f", file]);
            assert.equal(r.status, 0, `nft -c ${plan.name}:\n${r.output}`);
        });

        it(`firewall scripts for ${plan.name} match golden copies and pass shellcheck`, () => {
            const fw = renderFirewallScripts(plan);
            for (const [kind, text] of [["apply", fw.apply], ["confirm", fw.confirm], ["remove", fw.remove]] as const) {
                shellcheck(golden(`firewall/${plan.name}-${kind}.sh`, text));
            }
        });

        it(`bootstrap and preflight for ${plan.name} match golden copies and pass shellcheck`, () => {
            shellcheck(golden(`bootstrap/${plan.name}.sh`, renderBootstrap(plan, "/data")));
            shellcheck(golden(`preflight/${plan.name}.sh`, renderPreflight(plan.name, "enforce", "/data", hostTarget(plan.nodes))));
        });
    }

    it("the bootstrap keeps every port the host listens on out of the ephemeral range: the kernel of a network namespace of its own takes the list, another's reservation stays, a port no longer listed goes, and systemd-sysctl applies the file at boot to the same list", () => {
        const shared = plans().find((p) => p.name === "h-shared")!;
        const script = renderBootstrap(shared, "/data");
        assert.match(script, /^reserve_ports \/etc\/sysctl\.d\/90-nodefleet-reserved-ports\.conf \/proc\/sys\/net\/ipv4\/ip_local_reserved_ports 8080,8880,40400,47303,47545,47546,47551,47656,47657,47658,47660,47661$/m);
        const fn = /^reserve_ports\(\) \{\n[\s\S]*?\n\}\n/m.exec(script)![0];
        const sysctl = ["/usr/lib/systemd/systemd-sysctl", "/lib/systemd/systemd-sysctl"].find((f) => fs.existsSync(f));
        assert.ok(sysctl, "systemd-sysctl is not installed (apt-get install systemd)");
        const dir = fs.mkdtempSync(path.join(tmp, "sysctl-"));
        const run = [
            "set -eu", fn, `conf=${dir}/90-nodefleet.conf; proc=/proc/sys/net/ipv4/ip_local_reserved_ports`,
            'echo 30000-30002 > "$proc"',
            'reserve_ports "$conf" "$proc" 8080,47656,40400 >/dev/null; echo "first: $(cat "$proc")"',
            'reserve_ports "$conf" "$proc" 8080,47656 >/dev/null; echo "a node gone: $(cat "$proc")"',
            `echo > "$proc"; ${sysctl} "$conf"; echo "at boot: $(cat "$proc")"`,
            'reserve_ports "$conf" "$proc" "" >/dev/null; echo "no node: $(cat "$proc") $(test -e "$conf" && echo file-left || echo file-gone)"',
            // A kernel setting it can read but not write (a file mounted read-only in its place, as a
            // read-only /proc/sys is): refused, named, with the reason.
            `echo 30000 > ${dir}/ro; mount --bind ${dir}/ro ${dir}/ro; mount -o remount,ro,bind ${dir}/ro`,
            `if reserve_ports "$conf" ${dir}/ro 8080 2>${dir}/err; then echo "unwritable: went on"; else echo "unwritable: refused"; fi`,
            'echo "boot file: $(test -e "$conf" && echo written || echo as-it-was)"',
        ].join("\n");
        // A user, network and mount namespace of their own: this machine's reservations and mounts are not touched.
        const r = runTool("unshare", ["-rnm", "sh", "-c", run]);
        assert.equal(r.status, 0, r.output);
        assert.deepEqual(r.output.trim().split("\n"), [
            "first: 8080,30000-30002,40400,47656",
            "a node gone: 8080,30000-30002,47656",
            "at boot: 8080,30000-30002,47656",
            "no node: 30000-30002 file-gone",
            "unwritable: refused",
            "boot file: as-it-was",
        ]);
        assert.match(fs.readFileSync(path.join(dir, "err"), "utf8"), /^bootstrap: cannot write \S+\/ro \(its \/proc\/sys\/net is read-only here\?\): the ports its nodes listen on would stay in the ephemeral range/);
    });

    it("the data volume script matches its golden copy and passes shellcheck", () => {
        shellcheck(golden("bootstrap/data-volume.sh", renderDataVolume("h1", "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_vol0123456789abcdef0", "/data")));
    });

    it("the firewall unit matches its golden copy and passes systemd-analyze verify", () => {
        requireTool("systemd-analyze", "systemd");
        const file = golden("firewall/nodefleet-firewall.service", renderFirewallUnit());
        // verify wants the ruleset path of ConditionPathExists= only at run time; ExecStart must exist.
        const r = runTool("systemd-analyze", ["verify", file]);
        assert.equal(r.status, 0, r.output);
        assert.equal(r.output.trim(), "", `systemd-analyze verify warned:\n${r.output}`);
    });

    it("the reserved-ports unit matches its golden copy and passes systemd-analyze verify", () => {
        requireTool("systemd-analyze", "systemd");
        const r = runTool("systemd-analyze", ["verify", golden("bootstrap/nodefleet-reserved-ports.service", renderReservedPortsUnit())]);
        assert.equal(r.status, 0, r.output);
        assert.equal(r.output.trim(), "", `systemd-analyze verify warned:\n${r.output}`);
    });

    it("the shared host opens both roles' p2p ports, SSH on its sshd port, RPC to its CIDR only", () => {
        const shared = plans().find((p) => p.name === "h-shared")!;
        const rs = renderFirewallScripts(shared).ruleset;
        assert.match(rs, /ip saddr \{ 198\.51\.100\.0\/24 \} tcp dport 2200 accept/);
        assert.match(rs, /ip6 saddr \{ 2001:db8::\/48 \} tcp dport 2200 accept/);
        assert.match(rs, /ip saddr \{ 10\.0\.0\.0\/8 \} tcp dport 8080 accept/);
        assert.ok(!/^\s*tcp dport 8080 accept/m.test(rs));
        for (const p of [40400, 47303, 47656]) assert.match(rs, new RegExp(`tcp dport ${p} accept`));
    });

    it("the firewall apply script refuses a ruleset nft cannot parse, before changing anything", () => {
        // Run the real apply script against a stub nft that fails -c: nothing may be applied.
        const plan = plans()[0];
        const bin = fs.mkdtempSync(path.join(tmp, "bin-"));
        const log = path.join(bin, "calls");
        fs.writeFileSync(path.join(bin, "nft"), `#!/bin/sh\necho "nft $*" >> ${log}\n[ "$1" = "-c" ] && { echo "Error: syntax error" >&2; exit 1; }\nexit 0\n`, { mode: 0o755 });
        fs.writeFileSync(path.join(bin, "systemd-run"), `#!/bin/sh\necho "systemd-run $*" >> ${log}\n`, { mode: 0o755 });
        fs.writeFileSync(path.join(bin, "systemctl"), `#!/bin/sh\necho "systemctl $*" >> ${log}\n`, { mode: 0o755 });
        const root = fs.mkdtempSync(path.join(tmp, "root-"));
        const script = renderFirewallScripts(plan).apply.replaceAll("/etc/", `${root}/etc/`);
        fs.mkdirSync(`${root}/etc/systemd/system`, { recursive: true });
        const r = runTool("sh", ["-c", `PATH=${bin}:$PATH sh -s`], script);
        assert.notEqual(r.status, 0);
        const calls = fs.readFileSync(log, "utf8").trim().split("\n");
        assert.equal(calls.length, 1, `only the check may run, got:\n${calls.join("\n")}`);
        assert.match(calls[0], /^nft -c -f /);
    });
});

describe("preflight script on this machine", () => {
    // The real script against the real /proc and disks of the machine running the tests.
    const target = (cores: number) => ({ cores, memoryGb: 1, diskGb: 1, ssd: false, defaultDiskGb: 1 });
    const run = (mode: "enforce" | "warn", mount: string, cores: number) => runTool("sh", ["-s"], renderPreflight("local", mode, mount, target(cores)));

    it("passes a target the machine meets and prints the facts it measured", () => {
        const r = run("enforce", "/", 1);
        assert.equal(r.status, 0, r.output);
        assert.match(r.output, new RegExp(`^facts: cores=${os.cpus().length} memory_gib=\\d+ disk_gb=\\d+ rotational=`, "m"));
        assert.match(r.output, /preflight: host meets the target/);
    });

    it("fails in enforce mode, naming the shortfall", () => {
        const r = run("enforce", "/", 999);
        assert.equal(r.status, 1);
        assert.match(r.output, new RegExp(`shortfall: cores: has ${os.cpus().length}, needs 999`));
    });

    it("reports but continues in warn mode", () => {
        const r = run("warn", "/", 999);
        assert.equal(r.status, 0);
        assert.match(r.output, /shortfall: cores: .*\n.*continuing \(hardwareCheck: warn\)/);
    });

    it("refuses a data mount point that does not exist", () => {
        const r = run("warn", "/nonexistent-nodefleet", 1);
        assert.equal(r.status, 2);
        assert.match(r.output, /data mount point \/nonexistent-nodefleet does not exist/);
    });
});

describe("quoting helpers", () => {
    const hostile = ["plain", "it's", 'say "hi"', "a\nb", "$(touch /tmp/pwned)", "`id`", "${HOME}", "back\\slash", "", " lead", "semi;colon|pipe&"];

    it("shellWord keeps every value one literal word", () => {
        for (const v of hostile) {
            const out = sh(`printf '%s' ${shellWord(v)}`);
            assert.equal(out, v, `value ${JSON.stringify(v)}`);
        }
    });

    it("tomlString round-trips every value through a real TOML parser", () => {
        const doc = hostile.map((v, i) => `k${i} = ${tomlString(v)}`).join("\n") + "\n";
        const r = runTool("python3", ["-c", "import sys, tomllib, json; print(json.dumps(tomllib.loads(sys.stdin.read())))"], doc);
        assert.equal(r.status, 0, r.output);
        const parsed = JSON.parse(r.output);
        hostile.forEach((v, i) => assert.equal(parsed[`k${i}`], v));
        // Control characters that TOML forbids raw are escaped too.
        assert.equal(tomlString("\u0001\u007f"), '"\\u0001\\u007f"');
    });

    it("templates are strict: a missing variable is an error, not an empty string", () => {
        assert.throws(() => render("data-volume.sh", { host: "h1", mount: "/data" }), /template value for \{\{sh\}\} at line \d+ is missing/);
        assert.throws(() => render("data-volume.sh", { device: "/dev/x", mount: "/data" }), /template value for \{\{comment\}\} at line 2 is missing/);
        assert.throws(() => render("preflight.sh", { host: "h", mode: "warn", mount: "/d", cores: 1, memoryGb: 1, diskGb: 1 }), /template value for \{\{if\}\}/);
        assert.throws(() => render("bootstrap.sh", { host: "h", packages: ["a"], operator: "o", mount: "/d" }), /template value for \{\{each\}\}/);
    });
});
