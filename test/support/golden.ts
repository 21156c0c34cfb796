// Golden files: every rendered host file is committed under test/golden so any change
// shows in review. UPDATE_GOLDEN=1 rewrites them; CI never sets it.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";

const ROOT = path.resolve(__dirname, "../../..");
export const GOLDEN_DIR = path.join(ROOT, "test", "golden");

export function golden(relPath: string, actual: string): string {
    const file = path.join(GOLDEN_DIR, relPath);
    if (process.env.UPDATE_GOLDEN === "1") {
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, actual);
    }
    assert.ok(fs.existsSync(file), `golden file ${relPath} is missing (run the tests with UPDATE_GOLDEN=1 and review the diff)`);
    assert.equal(actual, fs.readFileSync(file, "utf8"), `${relPath} differs from its golden copy`);
    return file;
}

/** The real validator must be installed: a missing tool fails, it does not skip. */
export function requireTool(tool: string, pkg: string): void {
    const found = spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0;
    assert.ok(found, `${tool} is not installed (apt-get install ${pkg}; scripts/setup.sh does this)`);
}

export interface ToolResult {
    readonly status: number | null;
    readonly output: string;
}

export function runTool(cmd: string, args: string[], input?: string): ToolResult {
    const r = spawnSync(cmd, args, { input, encoding: "utf8" });
    return { status: r.status, output: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

export function sh(script: string): string {
    return execFileSync("sh", ["-c", script], { encoding: "utf8" });
}

/**
 * systemd-analyze verify of unit files (name -> text), written to a fresh directory. verify also
 * complains that the units' binaries are missing on this machine; those lines (and lines matching
 * `alsoAllowed`, e.g. a dependency unit not installed here) are allowed, nothing else is.
 */
export function verifyUnits(files: Record<string, string>, alsoAllowed?: RegExp): void {
    requireTool("systemd-analyze", "systemd");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-units-"));
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
    const r = runTool("systemd-analyze", ["verify", "--man=no", ...Object.keys(files).map((n) => path.join(dir, n))]);
    fs.rmSync(dir, { recursive: true, force: true });
    const problems = r.output.split("\n").filter((l) => l.trim() && !/is not executable|No such file or directory/.test(l) && !(alsoAllowed?.test(l) ?? false));
    assert.deepEqual(problems, [], r.output);
}

/** A host script with /opt/nodefleet and /var/lib/nodefleet moved under `root`: run here, in a temp dir, as a host would. */
export function underRoot(script: string, root: string): string {
    return script.replaceAll("/opt/nodefleet", `${root}/opt/nodefleet`).replaceAll("/var/lib/nodefleet", `${root}/var/lib/nodefleet`);
}
