// Real-CLI tier: the pipeline's jobs on stock Pulumi, installed as the workflows install it.
// `scripts/ci/install-pulumi.sh` fetches the CLI release from a local mirror that stands in for
// Pulumi's download site (a tarball laid out as Pulumi's, with its checksums file), built from the
// stock CLI (v3.248.0 with no patch: lab/toolchain.sh stock), and the command provider through
// `pulumi plugin install --server` from the same mirror (the stock provider 1.2.1). Then
// `scripts/ci/stack.sh` preview (policy pack), up and drift with NODEFLEET_TOOLCHAIN=stock on an S3
// backend (moto, lab/s3.sh) against the scripted SSH hosts. What this cannot prove: Pulumi's own
// download site and plugin server (none is reachable here), and a runner's user that is not root.
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT, ScratchProject } from "../support/cli";
import { freePort, until } from "../support/process";
import { ScriptedHosts, onScriptedHosts } from "../support/scripted-hosts";
import { s3Server, type S3Server } from "../support/s3";
import { PULUMI_TARBALL, PULUMI_VERSION, makePulumiMirror } from "../support/pulumi-mirror";

const DEV_CONFIG = fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
const SOURCES = ["Pulumi.yaml", "package.json", "package-lock.json", "tsconfig.json", "index.ts", "components", "templates", "hostfiles", "policy", "status", "scripts", "lab"];
const BUCKET = "nodefleet-stock";
const VERSION = PULUMI_VERSION;
const TARBALL = PULUMI_TARBALL;

describe("the pipeline on stock Pulumi, installed as the workflows install it", { timeout: 20 * 60_000 }, () => {
    const lab = new ScriptedHosts();
    const mirror = fs.mkdtempSync(path.join(os.tmpdir(), "pulumi-mirror-"));
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "runner-home-"));
    const requests = path.join(home, "..", `${path.basename(home)}-mirror.log`);
    /** The paths the mirror served since the last call (its request log: "GET /path HTTP/1.1" 200). */
    const fetched = (): string[] => {
        const lines = fs.existsSync(requests) ? fs.readFileSync(requests, "utf8").split("\n") : [];
        fs.truncateSync(requests);
        return lines.map((l) => /"GET (\S+) HTTP/.exec(l)?.[1]).filter((p): p is string => p !== undefined);
    };
    let server: ChildProcess | undefined;
    let base = "";
    let s3: S3Server | undefined;
    let project: ScratchProject;
    let env: NodeJS.ProcessEnv;

    before(async () => {
        makePulumiMirror(mirror);
        // A server of its own (the jobs run synchronously here), its request log read as what was fetched.
        const mirrorPort = await freePort();
        server = spawn("python3", ["-m", "http.server", "--bind", "127.0.0.1", "--directory", mirror, String(mirrorPort)], { stdio: ["ignore", "ignore", fs.openSync(requests, "w")] });
        base = `http://127.0.0.1:${mirrorPort}`;
        await until("the mirror", 30, async () => ((await fetch(`${base}/sdk/${TARBALL}`, { method: "HEAD" })).ok ? true : undefined), server, undefined, "http.server");

        s3 = await s3Server();
        const backendUrl = await s3.bucket(BUCKET);
        ({ project } = await lab.start("stock", (ports) => onScriptedHosts(DEV_CONFIG, ports), SOURCES));
        lab.answerDrift();
        // A runner's environment: its own HOME, nothing of nodefleet's toolchain on PATH.
        const node = path.dirname(process.execPath);
        env = {
            HOME: home,
            PATH: `${node}:/usr/local/bin:/usr/bin:/bin`,
            NODEFLEET_TOOLCHAIN: "stock",
            NODEFLEET_NO_SOURCE_BUILD: "1",
            PULUMI_DOWNLOAD_BASE: `${base}/sdk`,
            PULUMI_PLUGIN_SERVER: `${base}/plugins`,
            PULUMI_BACKEND_URL: backendUrl,
            AWS_ACCESS_KEY_ID: "nodefleet-test",
            AWS_SECRET_ACCESS_KEY: "nodefleet-test",
            PULUMI_CONFIG_PASSPHRASE: "nodefleet-dev",
            PULUMI_NODEJS_TRANSPILE_ONLY: "true",
        };
    });
    after(() => {
        server?.kill();
        s3?.server.kill();
        lab.dispose();
        for (const d of [mirror, home, requests]) fs.rmSync(d, { recursive: true, force: true });
    });

    const job = (args: string[], extra: NodeJS.ProcessEnv = {}) => {
        const r = spawnSync("bash", args, { cwd: project.dir, env: { ...env, ...extra }, encoding: "utf8", timeout: 600_000 });
        return { status: r.status, stdout: r.stdout ?? "", output: `${r.stdout ?? ""}${r.stderr ?? ""}` };
    };

    it("refuses a CLI tarball whose sha256 is not the release's, installing nothing", () => {
        const good = fs.readFileSync(path.join(mirror, "sdk", TARBALL));
        fs.writeFileSync(path.join(mirror, "sdk", TARBALL), Buffer.concat([good, Buffer.from("tampered")]));
        try {
            const r = job(["scripts/ci/install-pulumi.sh", "stock"]);
            assert.equal(r.status, 1, r.output);
            assert.match(r.output, new RegExp(`${TARBALL.replace(/\./g, "\\.")}: sha256 [0-9a-f]{64}, but the release's checksums say [0-9a-f]{64}: not installed`));
            assert.equal(fs.existsSync(path.join(home, ".pulumi/bin/pulumi")), false);
        } finally {
            fs.writeFileSync(path.join(mirror, "sdk", TARBALL), good);
        }
    });

    it("installs the pinned CLI and the command provider as Pulumi documents, then a second run fetches nothing", () => {
        fetched();
        const r = job(["scripts/ci/install-pulumi.sh", "stock"], { GITHUB_PATH: path.join(home, "github-path") });
        assert.equal(r.status, 0, r.output);
        const bin = path.join(home, ".pulumi/bin");
        assert.equal(r.stdout.trim(), bin);
        assert.equal(fs.readFileSync(path.join(home, "github-path"), "utf8"), `${bin}\n`, "the next steps find pulumi");
        assert.equal(spawnSync(path.join(bin, "pulumi"), ["version"], { encoding: "utf8", env: { HOME: home } }).stdout.trim(), `v${VERSION}`);
        assert.ok(fs.existsSync(path.join(home, ".pulumi/plugins/resource-command-v1.2.1/pulumi-resource-command")));
        assert.deepEqual(fetched().map((u) => u.split("?")[0]), [`/sdk/${TARBALL}`, `/sdk/pulumi-${VERSION}-checksums.txt`, "/plugins/pulumi-resource-command-v1.2.1-linux-amd64.tar.gz"]);
        const again = job(["scripts/ci/install-pulumi.sh", "stock"]);
        assert.equal(again.status, 0, again.output);
        assert.deepEqual(fetched(), []);
    });

    it("previews with the policy pack, brings the stack up and finds no drift, on the stock CLI and provider alone", () => {
        const onPath = { PATH: `${path.join(home, ".pulumi/bin")}:${env.PATH}` };
        const preview = job(["scripts/ci/stack.sh", "preview", "stock"], onPath);
        assert.equal(preview.status, 0, preview.output.slice(-5000));
        assert.match(fs.readFileSync(path.join(project.dir, ".state/ci/preview-stock.txt"), "utf8"), /\+ 42 to create/);
        assert.doesNotMatch(preview.output, /\[toolchain\]/, "nodefleet's toolchain was not used");
        const up = job(["scripts/ci/stack.sh", "up", "stock"], onPath);
        assert.equal(up.status, 0, up.output.slice(-5000));
        const drift = job(["scripts/ci/stack.sh", "drift", "stock"], onPath);
        assert.equal(drift.status, 0, drift.output.slice(-5000));
        // Without the install, the job says what to run.
        const bare = job(["scripts/ci/stack.sh", "preview", "stock"]);
        assert.equal(bare.status, 1);
        assert.match(bare.output, /NODEFLEET_TOOLCHAIN=stock runs the pulumi on PATH, which must be v3\.248\.0 \(found: none\): scripts\/ci\/install-pulumi\.sh stock installs it/);
    });
});
