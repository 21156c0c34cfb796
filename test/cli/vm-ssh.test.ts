// `lab/vm.sh ssh HOST CMD`, the way the E2E tests and operators run one command on a dev host,
// run on a scratch copy of the script with a scripted `ssh` first on PATH. These tests pin which
// failures are tried again (only those before the session opens, while the host's container runs:
// a host rebooting refuses connections for a moment) and that everything else, the command's own
// exit status included, passes through. What they cannot show: that a real sshd recovers within the
// retries (the E2E tier's reboots).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT } from "../support/cli";
import { withoutRetryNotices } from "../support/lab";

describe("vm.sh ssh: one command on a dev VM", () => {
    let dir: string;

    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-vmssh-"));
        // vm.sh with the whole library it sources from: a helper moved into lab/lib needs no change here.
        fs.cpSync(path.join(ROOT, "lab/lib"), path.join(dir, "root/lab/lib"), { recursive: true });
        fs.copyFileSync(path.join(ROOT, "lab/vm.sh"), path.join(dir, "root/lab/vm.sh"));
        fs.mkdirSync(path.join(dir, "bin"));
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    /**
     * Runs `vm.sh ssh dev-1 CMD` where `ssh` answers each attempt with the next of `answers`
     * ([exit status, stderr]; the last one also runs the command). `running`: whether dev-1's supervisor
     * pid file names a live process.
     */
    function run(answers: [number, string][], running = true) {
        const vmDir = path.join(dir, "root/.state/vm/dev-1");
        fs.mkdirSync(vmDir, { recursive: true });
        fs.writeFileSync(path.join(vmDir, "supervisor.pid"), running ? String(process.pid) : "999999999");
        const tries = path.join(dir, "tries");
        fs.writeFileSync(tries, "");
        const cases = answers
            .map(([status, stderr], i) => `${i + 1}) printf '%s\\n' ${JSON.stringify(stderr)} >&2; ${i === answers.length - 1 ? `cat; echo "ran: \${*: -1}"; ` : ""}exit ${status} ;;`)
            .join("\n    ");
        fs.writeFileSync(path.join(dir, "bin/ssh"), `#!/usr/bin/env bash\necho x >> ${JSON.stringify(tries)}\nn=$(wc -l < ${JSON.stringify(tries)})\ncase $n in\n    ${cases}\n    *) exit 99 ;;\nesac\n`, { mode: 0o755 });
        const r = spawnSync("bash", [path.join(dir, "root/lab/vm.sh"), "ssh", "dev-1", "systemctl is-active x"], {
            encoding: "utf8",
            input: "from stdin\n",
            timeout: 60_000,
            env: { PATH: `${path.join(dir, "bin")}:/usr/bin:/bin`, HOME: dir, NODEFLEET_SSH_RETRY_PAUSE: "0.2" },
        });
        return { status: r.status, stdout: r.stdout, stderr: r.stderr, tries: fs.readFileSync(tries, "utf8").split("\n").filter(Boolean).length };
    }

    it("tries again after a banner-exchange timeout, then passes the command's stdin, stdout and exit status through", () => {
        const r = run([
            [255, "Connection timed out during banner exchange"],
            [255, "kex_exchange_identification: read: Connection reset by peer"],
            [3, "inactive"],
        ]);
        assert.equal(r.tries, 3);
        assert.equal(r.status, 3);
        assert.equal(r.stdout, "from stdin\nran: systemctl is-active x\n");
        assert.equal((r.stderr.match(/failed before the session opened/g) ?? []).length, 2, r.stderr);
        assert.match(r.stderr, /inactive/);
        // The E2E helper (onVm) reads the command's output without these notices: they are
        // vm.sh's progress, not what the command printed.
        const split = withoutRetryNotices(r.stderr);
        assert.equal(split.notices.length, 2, r.stderr);
        assert.equal(split.said, "inactive\n");
    });

    it("does not run a command twice: a failure after the session opened is passed through at once", () => {
        const r = run([[255, "Connection to 127.0.0.1 closed by remote host."], [0, "never"]]);
        assert.equal(r.tries, 1);
        assert.equal(r.status, 255);
        assert.match(r.stderr, /closed by remote host/);
        assert.doesNotMatch(r.stderr, /trying again/);
    });

    it("gives up after five attempts, with ssh's last message", () => {
        const r = run(Array.from({ length: 6 }, () => [255, "Connection timed out during banner exchange"] as [number, string]));
        assert.equal(r.tries, 5);
        assert.equal(r.status, 255);
        assert.match(r.stderr, /Connection timed out during banner exchange\n$/);
    });

    it("does not wait for a host whose container is not running", () => {
        const r = run([[255, "ssh: connect to host 127.0.0.1 port 2201: Connection refused"], [0, "never"]], false);
        assert.equal(r.tries, 1);
        assert.equal(r.status, 255);
    });
});
