// Two scripted SSH hosts (lab/sim/scripted-host: real SSH that runs nothing, records each step it
// is asked to run and fails the ones a test names) and a scratch project whose config points at
// them, with what the dev config reads besides: a real SSH key file and the artifact sums.
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT, ScratchProject, sh, type Sources } from "./cli";

export class ScriptedHosts {
    /** The hosts' directory: their ports, the log of what they ran, what to fail or answer. */
    readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-scripted-host-"));
    private host?: ChildProcess;
    private project?: ScratchProject;

    /** `hosts` SSH endpoints (one port each); the project's config is `configFor` their ports. */
    async start(stack: string, configFor: (ports: number[]) => string, sources?: Sources, hosts = 2, program?: "compiled" | "typescript"): Promise<{ project: ScratchProject; ports: number[] }> {
        const ports = await this.listen(hosts);
        const project = (this.project = new ScratchProject(stack, configFor(ports), undefined, sources, program));
        project.writeDevFiles("generated");
        return { project, ports };
    }

    /** Starts `hosts` SSH endpoints without a project (for stacks of a project made elsewhere): their ports. */
    async listen(hosts = 2): Promise<number[]> {
        const bin = sh("bash", [path.join(ROOT, "lab/scripted-host.sh")]).stdout.trim();
        this.host = spawn(bin, [this.dir, String(hosts)], { stdio: ["ignore", "ignore", "inherit"] });
        const portFile = path.join(this.dir, "ports");
        for (let i = 0; i < 100 && !fs.existsSync(portFile); i++) await new Promise((r) => setTimeout(r, 100));
        return fs.readFileSync(portFile, "utf8").trim().split("\n").map(Number);
    }

    /** Per port: the SSH connections open now and the most open at once so far (the host's DIR/connections). */
    connections(): Map<number, { open: number; peak: number }> {
        const file = path.join(this.dir, "connections");
        const out = new Map<number, { open: number; peak: number }>();
        if (!fs.existsSync(file)) return out;
        for (const line of fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean)) {
            const [port, open, peak] = line.split(" ").map(Number);
            out.set(port!, { open: open!, peak: peak! });
        }
        return out;
    }

    /**
     * What these hosts' drift check (hostfiles/drift.py, sent on refresh) finds from now on, every
     * host alike: `drift`, none by default. The check is known by a line of its docstring.
     */
    answerDrift(drift: readonly { group: string; item: string; change: string }[] = []): void {
        fs.writeFileSync(path.join(this.dir, "answer"), JSON.stringify({ "nodefleet's drift check of a host": JSON.stringify({ records: 12, drift }) }));
    }

    dispose(): void {
        this.host?.kill();
        this.project?.dispose();
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}

/** The dev config with dev-1 and dev-2 at the scripted hosts' `ports` on this machine's loopback. */
export function onScriptedHosts(yaml: string, ports: readonly number[]): string {
    let out = yaml;
    for (const [i, port] of ports.slice(0, 2).entries()) {
        const address = `        address: 10.0.2.1${i + 1}\n`;
        if (!out.includes(address)) throw new Error(`the dev config has no dev-${i + 1} at ${address.trim()}`);
        out = out.replace(address, `        address: 127.0.0.1\n        port: ${port}\n`);
    }
    return out;
}
