// scripts/setup.sh as a pipeline job runs it: as a user who is not root. On a PATH that lacks the
// Debian tools it checks for (every other command of the machine kept), with `id`, `sudo` and
// `apt-get` replaced by recorders: a missing package is installed through `sudo -n` for a user with
// passwordless sudo (GitHub's runners), refused with what to do otherwise, and a pipeline job asks
// only for what it runs. What this cannot prove: apt on a real runner (the hosts' image build uses it).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../../..");
/** The commands whose absence makes setup.sh ask for a Debian package. */
const CHECKED = ["ssh", "nft", "shellcheck", "systemd-analyze", "patchelf"];

describe("scripts/setup.sh as a user who is not root (id, sudo and apt-get replaced by recorders)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "setup-user-"));
    const bin = path.join(dir, "bin");
    const log = path.join(dir, "calls.log");

    before(() => {
        fs.mkdirSync(bin);
        for (const d of ["/usr/local/bin", "/usr/bin", "/bin"]) {
            if (!fs.existsSync(d)) continue;
            for (const f of fs.readdirSync(d)) {
                if (CHECKED.includes(f) || ["id", "sudo", "apt-get", "node"].includes(f) || fs.existsSync(path.join(bin, f))) continue;
                fs.symlinkSync(path.join(d, f), path.join(bin, f));
            }
        }
        fs.symlinkSync(process.execPath, path.join(bin, "node"), "file");
        fs.writeFileSync(path.join(bin, "id"), "#!/bin/sh\n[ \"$1\" = -u ] && echo 1000 || echo 'uid=1000(runner)'\n", { mode: 0o755 });
        // sudo -n runs its command when the test allows it (a file says so), else refuses as sudo does.
        fs.writeFileSync(path.join(bin, "sudo"), `#!/bin/sh\necho "sudo $*" >> ${JSON.stringify(log)}\n[ -f ${JSON.stringify(path.join(dir, "sudo-ok"))} ] || { echo "sudo: a password is required" >&2; exit 1; }\n[ "$1" = -n ] && shift\nexec "$@"\n`, { mode: 0o755 });
        fs.writeFileSync(path.join(bin, "apt-get"), `#!/bin/sh\necho "apt-get $*" >> ${JSON.stringify(log)}\n`, { mode: 0o755 });
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    function setup(env: Record<string, string>, sudo: boolean) {
        fs.rmSync(log, { force: true });
        if (sudo) fs.writeFileSync(path.join(dir, "sudo-ok"), "");
        else fs.rmSync(path.join(dir, "sudo-ok"), { force: true });
        const r = spawnSync("bash", [path.join(ROOT, "scripts/setup.sh")], { encoding: "utf8", env: { PATH: bin, HOME: dir, NODEFLEET_APT_LOCK: path.join(dir, "apt.lock"), ...env } });
        const calls = fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : [];
        return { status: r.status, stderr: r.stderr, calls };
    }

    it("a pipeline job gets the one package it lacks through sudo -n, and asks for none of the tests' tools", () => {
        const r = setup({ NODEFLEET_SETUP: "pipeline" }, true);
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stderr, /installing openssh-client \(apt-get\)/);
        const apt = r.calls.filter((c) => c.startsWith("apt-get"));
        assert.equal(apt.length, 2, r.calls.join("\n"));
        assert.match(apt[1]!, /^apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends openssh-client$/);
        assert.ok(r.calls.some((c) => /^sudo -n env DEBIAN_FRONTEND=noninteractive sh -c /.test(c)), "apt ran through sudo -n");
    });

    it("the test command's setup asks for the tests' tools too, through sudo -n", () => {
        const r = setup({}, true);
        assert.equal(r.status, 0, r.stderr);
        const install = r.calls.find((c) => c.includes(" install "));
        for (const p of ["openssh-client", "nftables", "shellcheck", "systemd", "patchelf"]) assert.match(install ?? "", new RegExp(` ${p}( |$)`), p);
    });

    it("without passwordless sudo it stops, naming the packages and the ways to install them, and runs no apt-get", () => {
        const r = setup({ NODEFLEET_SETUP: "pipeline" }, false);
        assert.equal(r.status, 1);
        assert.match(r.stderr, /missing openssh-client: run as root, or as a user with passwordless sudo, or apt-get install openssh-client/);
        assert.deepEqual(r.calls.filter((c) => c.startsWith("apt-get")), []);
    });
});
