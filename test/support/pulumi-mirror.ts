// A local stand-in for Pulumi's download site and plugin server (neither is reachable here), laid out
// as Pulumi's: DIR/sdk/pulumi-vX-linux-x64.tar.gz with its checksums file, and
// DIR/plugins/pulumi-resource-command-v1.2.1-linux-amd64.tar.gz; filled from the stock toolchain
// (v3.248.0 and the command provider with no patch: lab/toolchain.sh stock).
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT, sh } from "./cli";

export const PULUMI_VERSION = "3.248.0";
export const PULUMI_TARBALL = `pulumi-v${PULUMI_VERSION}-linux-x64.tar.gz`;

/** Builds the stock toolchain if needed, then lays out its release in `dir` (sdk/ and plugins/). */
export function makePulumiMirror(dir: string): void {
    sh("bash", [path.join(ROOT, "lab/toolchain.sh"), "stock"]);
    const stock = path.join(ROOT, ".tools/stock/pulumi");
    const stage = fs.mkdtempSync(path.join(os.tmpdir(), "pulumi-release-"));
    fs.mkdirSync(path.join(stage, "pulumi"));
    for (const f of fs.readdirSync(path.join(stock, "bin"))) fs.copyFileSync(path.join(stock, "bin", f), path.join(stage, "pulumi", f));
    fs.mkdirSync(path.join(dir, "sdk"), { recursive: true });
    fs.mkdirSync(path.join(dir, "plugins"), { recursive: true });
    sh("tar", ["-czf", path.join(dir, "sdk", PULUMI_TARBALL), "-C", stage, "pulumi"]);
    const digest = createHash("sha256").update(fs.readFileSync(path.join(dir, "sdk", PULUMI_TARBALL))).digest("hex");
    fs.writeFileSync(path.join(dir, "sdk", `pulumi-${PULUMI_VERSION}-checksums.txt`), `${"0".repeat(64)}  pulumi-v${PULUMI_VERSION}-darwin-x64.tar.gz\n${digest}  ${PULUMI_TARBALL}\n`);
    sh("tar", ["-czf", path.join(dir, "plugins", "pulumi-resource-command-v1.2.1-linux-amd64.tar.gz"), "-C", path.join(stock, "plugins/resource-command-v1.2.1"), "pulumi-resource-command"]);
    fs.rmSync(stage, { recursive: true, force: true });
}
