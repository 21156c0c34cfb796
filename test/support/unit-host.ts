// A rendered systemd unit run on this machine, for the node that a dev VM cannot run in reasonable
// time (the real Aztec 4.1.2 node: test/e2e/aztec-node.test.ts says why). NOT systemd: a stand-in
// for the part of it these tests use, named as one. It starts ExecStart= with the unit's
// Environment= and EnvironmentFile= variables in WorkingDirectory=, keeps what the process prints as
// the unit's journal, restarts it after RestartSec= when Restart=on-failure and it fails, and stops
// it with SIGTERM as `systemctl stop` does (an exit code other than 0 and SuccessExitStatus= leaves it "failed"). The two questions the host tools ask of systemd
// (`systemctl is-active UNIT`, `journalctl -u UNIT … -o cat`) are answered from that state by the
// scripts `standIns()` writes, put first on the tools' PATH. What it does not do: User= (the
// process runs as the test's user), cgroups, sandboxing, dependencies; the dev VMs prove the
// rendered units under real systemd.
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { systemdWords, unitLaunch } from "./aztec";

/** The [Service] settings of a unit as written (the last of a repeated key wins). */
export function serviceSettings(unit: string): Record<string, string> {
    const out: Record<string, string> = {};
    let inService = false;
    for (const line of unit.split("\n")) {
        if (/^\[.*\]$/.test(line)) inService = line === "[Service]";
        else if (inService && /^[A-Za-z]+=/.test(line)) out[line.slice(0, line.indexOf("="))] = line.slice(line.indexOf("=") + 1);
    }
    return out;
}

export class UnitHost {
    readonly journal: string;
    private readonly stateFile: string;
    private child: ChildProcess | null = null;
    private stopping = false;
    private restartTimer: NodeJS.Timeout | null = null;
    /** How each run of the process ended (exit code or signal), oldest first. */
    readonly exits: string[] = [];
    /** How many times the process was started. */
    starts = 0;

    /** unit: the rendered unit; envFile: the content of its EnvironmentFile= (the key step writes it); dir: where state lives. */
    constructor(readonly name: string, private readonly unit: string, private readonly envFile: () => string, private readonly dir: string) {
        fs.mkdirSync(dir, { recursive: true });
        this.journal = path.join(dir, `${name}.journal`);
        this.stateFile = path.join(dir, `${name}.state`);
        fs.writeFileSync(this.journal, "");
        this.setState("inactive");
    }

    private setState(state: string): void {
        fs.writeFileSync(this.stateFile, `${state}\n`);
    }

    get state(): string {
        return fs.readFileSync(this.stateFile, "utf8").trim();
    }

    get pid(): number | undefined {
        return this.child?.pid;
    }

    /** `systemctl start`: runs ExecStart= as the unit says (the env file read now, as systemd reads it at each start). */
    start(): void {
        if (this.child) return;
        this.stopping = false;
        const s = serviceSettings(this.unit);
        const launch = unitLaunch(this.unit, this.envFile());
        const program = systemdWords(s.ExecStart!)[0]!;
        const out = fs.openSync(this.journal, "a");
        this.starts++;
        const child = spawn(program, launch.argv, { cwd: s.WorkingDirectory, env: { PATH: "/usr/local/bin:/usr/bin:/bin", ...launch.env }, stdio: ["ignore", out, out] });
        fs.closeSync(out);
        this.child = child;
        this.setState("active");
        // systemd: exit 0, a code SuccessExitStatus= names, or (on stop) SIGTERM/SIGKILL's own end is clean.
        const clean = new Set(["0", ...(s.SuccessExitStatus ?? "").split(/\s+/).filter(Boolean)]);
        child.on("exit", (code, signal) => {
            this.exits.push(signal ?? String(code));
            this.child = null;
            const failed = signal !== null ? !this.stopping : !clean.has(String(code));
            if (failed && s.Restart === "on-failure") {
                // systemd: "activating (auto-restart)", is-active says "activating".
                this.setState("activating");
                this.restartTimer = setTimeout(() => this.start(), Number(s.RestartSec ?? "0.1") * 1000);
            } else this.setState(failed ? "failed" : "inactive"); // a failed stop too: `systemctl stop` of an unclean exit leaves "failed"
        });
    }

    /** `systemctl stop`: SIGTERM, then SIGKILL after TimeoutStopSec=; resolves with how the process ended. */
    async stop(): Promise<string | null> {
        this.stopping = true;
        if (this.restartTimer) clearTimeout(this.restartTimer);
        this.restartTimer = null;
        const child = this.child;
        if (!child) {
            this.setState("inactive");
            return null;
        }
        const ended = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        child.kill("SIGTERM");
        const timeout = Number(serviceSettings(this.unit).TimeoutStopSec ?? "90") * 1000;
        const kill = setTimeout(() => child.kill("SIGKILL"), timeout);
        await ended;
        clearTimeout(kill);
        return this.exits[this.exits.length - 1] ?? null;
    }

    /**
     * A directory with `systemctl` and `journalctl` answering `is-active UNIT` and `-u UNIT … -o cat`
     * for this unit from its state and journal (anything else: exit 1, said on stderr).
     */
    standIns(service: string): string {
        const bin = path.join(this.dir, "bin");
        fs.mkdirSync(bin, { recursive: true });
        const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
        fs.writeFileSync(path.join(bin, "systemctl"), [
            "#!/bin/sh",
            "# systemd stand-in (test/support/unit-host.ts): is-active of one unit",
            `if [ "$1" = is-active ] && [ "$2" = ${q(service)} ]; then s=$(cat ${q(this.stateFile)}); echo "$s"; [ "$s" = active ]; exit; fi`,
            'echo "systemctl stand-in: not answered: $*" >&2; exit 1',
            "",
        ].join("\n"), { mode: 0o755 });
        fs.writeFileSync(path.join(bin, "journalctl"), [
            "#!/bin/sh",
            "# systemd stand-in (test/support/unit-host.ts): this unit's journal, as -o cat prints it",
            `if [ "$1" = -u ] && [ "$2" = ${q(service)} ]; then cat ${q(this.journal)}; exit 0; fi`,
            'echo "journalctl stand-in: not answered: $*" >&2; exit 1',
            "",
        ].join("\n"), { mode: 0o755 });
        return bin;
    }
}
