// A release's URL with a credential: refused in plain config without being
// echoed, accepted from a secret; the install step gets it on its secret stdin, and the install
// script hands it to curl on curl's stdin: run for real here against a local HTTP server, with a
// curl on PATH that records its command line. What this cannot show: a host's `ps` during a real
// download (the VM tier installs the dev releases from plain URLs).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import { parseFleet } from "../../components/config/fleet";
import { renderRelease, wholeScript } from "../../components/hosts/scripts";
import { baseFleet, configIssues, secretSource, SECRETS } from "../support/fixtures";
import { golden, requireTool, runTool, underRoot } from "../support/golden";
import { buildStack } from "../support/stack";
import { registered, scriptOf } from "../support/mocks";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-release-url-"));
const PASSWORD = "s3cretPassw0rd";
const TOKEN = "tok3nValue9";

const issuesOf = configIssues;

/** The base fleet with its storage node's release at `url` (and `more` of the release). */
function withZgs(url: unknown, more: Record<string, unknown> = {}): any {
    const f = baseFleet();
    f.releases.zgs = { url, sha256: "5a".repeat(32), ...more };
    return f;
}

describe("release URL: config", () => {
    it("refuses a credential in plain config, naming where it is and never echoing it", () => {
        const cases: [string, RegExp][] = [
            [`https://ci:${PASSWORD}@artifacts.example.org/zgs/zgs_node-v1.1.1.tar.gz`, /user:password@/],
            [`https://artifacts.example.org/zgs/zgs_node-v1.1.1.tar.gz?access_token=${TOKEN}`, /in its query \(parameter access_token\)/],
        ];
        for (const [url, where] of cases) {
            const issues = issuesOf(withZgs(url));
            assert.equal(issues.length, 1, issues.join("\n"));
            assert.match(issues[0]!, /^releases\.zgs\.url: this URL carries a credential/);
            assert.match(issues[0]!, where);
            assert.match(issues[0]!, /pulumi config set --secret/);
            assert.ok(!issues[0]!.includes(PASSWORD) && !issues[0]!.includes(TOKEN), issues[0]);
        }
    });

    it("accepts a content digest in a plain URL's path (an artifact store's, not a key: RPC URLs refuse that shape)", () => {
        assert.deepEqual(issuesOf(withZgs(`https://artifacts.example.org/sha256/${"ab".repeat(32)}/zgs_node-v1.1.1.tar.gz`)), []);
    });

    it("accepts {secret: <name>} naming a secret that holds an http(s) URL; refuses one that is unset, plain or not a URL, without its value", () => {
        const url = `https://ci:${PASSWORD}@artifacts.example.org/zgs/zgs_node-v1.1.1.tar.gz`;
        assert.deepEqual(issuesOf(withZgs({ secret: "zgsUrl" }), { ...SECRETS, zgsUrl: url }), []);
        assert.match(issuesOf(withZgs({ secret: "zgsUrl" }))[0]!, /^releases\.zgs\.url\.secret: the config key it names is not set/);
        assert.match(issuesOf(withZgs({ secret: "zgsUrl" }), { ...SECRETS, zgsUrl: url }, ["zgsUrl"])[0]!, /^releases\.zgs\.url\.secret: the config key it names is stored in plain text/);
        const bad = issuesOf(withZgs({ secret: "zgsUrl" }), { ...SECRETS, zgsUrl: `ftp://ci:${PASSWORD}@artifacts.example.org/x.tar.gz` });
        assert.equal(bad.length, 1);
        assert.match(bad[0]!, /^releases\.zgs\.url\.secret: the secret it names: URL scheme must be http or https/);
        assert.ok(!bad[0]!.includes(PASSWORD));
        assert.match(issuesOf(withZgs({ secret: "no spaces" }))[0]!, /^releases\.zgs\.url\.secret: /);
        assert.match(issuesOf(withZgs({ url: "x" }))[0]!, /^releases\.zgs\.url: expected an http\(s\) URL, or \{secret: <name of a secret config key holding the URL>\}/);
    });

    it("finds a secret URL's line in sha256File by the file name in the secret's value; a missing line is said without that name; status, which decrypts no URL, only warns", () => {
        const sums = path.join(tmp, "SHA256SUMS");
        fs.writeFileSync(sums, `${"cd".repeat(32)}  zgs_node-v1.1.1.tar.gz\n`);
        const f = withZgs({ secret: "zgsUrl" }, { sha256: undefined, sha256File: sums });
        delete f.releases.zgs.sha256;
        const secrets = { ...SECRETS, zgsUrl: `https://ci:${PASSWORD}@artifacts.example.org/zgs/zgs_node-v1.1.1.tar.gz?x=1` };
        const plan = parseFleet(f, secretSource(secrets));
        const zgs = plan.hosts.flatMap((h) => h.releases).find((r) => r.name === "zgs")!;
        assert.deepEqual(zgs, { name: "zgs", url: { secret: "zgsUrl" }, sha256: "cd".repeat(32) });
        const missing = issuesOf(f, { ...secrets, zgsUrl: "https://artifacts.example.org/zgs/zgs_node-v9.tar.gz" });
        assert.deepEqual(missing, [`releases.zgs.sha256File: ${sums} has no entry for the file name of the URL the secret holds`]);
        const status = parseFleet(f, secretSource(secrets), { secretValues: false, releaseFilesRequired: false });
        assert.ok(status.warnings.some((w) => /^releases\.zgs\.sha256File: the release's URL is a secret not decrypted here/.test(w)), status.warnings.join("\n"));
    });
});

describe("release URL: the install step", () => {
    it("renders an install script that holds no URL and reads it from nodefleet_secret_url (golden, shellcheck)", () => {
        requireTool("shellcheck", "shellcheck");
        const s = renderRelease("h1", { name: "zgs", url: { secret: "zgsUrl" }, sha256: "ab".repeat(32) });
        assert.equal(s.secretUrlKey, "zgsUrl");
        const r = runTool("shellcheck", ["--shell=sh", "--severity=style", "--exclude=SC2154", golden("release/zgs-secret-url-install.sh", s.install)]);
        assert.equal(r.status, 0, r.output);
        assert.match(s.install, /^url="\$nodefleet_secret_url"$/m);
        assert.doesNotMatch(s.install, /https?:\/\//);
    });

    it("takes the URL from the secret's value onto its stdin, a secret, its output unlogged; no other step or bundled file holds it", async () => {
        const url = `https://ci:${PASSWORD}@artifacts.example.org/zgs/zgs_node-v1.1.1.tar.gz?access_token=${TOKEN}`;
        const f = withZgs({ secret: "zgsUrl" });
        f.nodes = [f.nodes[0]];
        delete f.hosts["h-sequencer"];
        delete f.hosts["h-validator"];
        await buildStack(f, { ...SECRETS, zgsUrl: url });
        const step = registered.find((r) => r.name === "fleet-h-storage-release-zgs")!;
        assert.ok(step.secretPaths.includes("stdin"), "the install's stdin is a secret");
        assert.equal(step.inputs.logging, "none");
        assert.ok(step.inputs.stdin.includes(`nodefleet_secret_url='${url}'`), "the stdin sets the URL");
        assert.match(scriptOf("fleet-h-storage-release-zgs"), /^url="\$nodefleet_secret_url"$/m);
        for (const r of registered.filter((x) => x.custom && x.name !== "fleet-h-storage-release-zgs")) {
            assert.ok(!JSON.stringify(r.inputs).includes(PASSWORD), `${r.name} carries the release URL`);
        }
        const bundle = registered.find((r) => r.type === "command:remote:CopyToRemote")!.archivePath!;
        for (const file of fs.readdirSync(bundle)) assert.ok(!fs.readFileSync(path.join(bundle, file), "utf8").includes(PASSWORD), `bundled ${file} holds the URL`);
    });
});

describe("release URL: the install script on this machine", () => {
    let server: ChildProcess;
    let port = 0;
    const served = fs.mkdtempSync(path.join(tmp, "served-"));
    const shim = fs.mkdtempSync(path.join(tmp, "bin-"));
    const argvLog = path.join(tmp, "curl-argv.log");
    const accessLog = path.join(tmp, "access.log");
    const archive = (() => {
        const src = fs.mkdtempSync(path.join(tmp, "src-"));
        fs.mkdirSync(path.join(src, "zgs"));
        fs.writeFileSync(path.join(src, "zgs", "zgs_node"), "#!/bin/sh\necho zgs\n", { mode: 0o755 });
        const r = spawnSync("tar", ["-czf", "-", "-C", src, "zgs"]);
        assert.equal(r.status, 0);
        return r.stdout;
    })();
    const sha = crypto.createHash("sha256").update(archive).digest("hex");

    before(async () => {
        fs.writeFileSync(path.join(served, "zgs_node-v1.1.1.tar.gz"), archive);
        port = 20000 + Math.floor(Math.random() * 20000);
        const log = fs.openSync(accessLog, "w");
        server = spawn("python3", ["-m", "http.server", "--bind", "127.0.0.1", String(port), "--directory", served], { stdio: ["ignore", log, log] });
        for (let i = 0; i < 100 && spawnSync("curl", ["-fsS", "-o", "/dev/null", `http://127.0.0.1:${port}/`]).status !== 0; i++) await new Promise((r) => setTimeout(r, 100));
        // A curl that writes its command line down, then is the real one.
        const real = spawnSync("sh", ["-c", "command -v curl"], { encoding: "utf8" }).stdout.trim();
        fs.writeFileSync(path.join(shim, "curl"), `#!/bin/sh\nprintf '%s\\n' "$*" >> ${argvLog}\nexec ${real} "$@"\n`, { mode: 0o755 });
    });
    after(() => server.kill());

    it("downloads with the secret URL (user:password@ and a query token) given to curl on its stdin: not in curl's argv, not in the output", () => {
        const root = fs.mkdtempSync(path.join(tmp, "root-"));
        const url = `http://ci:${PASSWORD}@127.0.0.1:${port}/zgs_node-v1.1.1.tar.gz?access_token=${TOKEN}`;
        const s = renderRelease("h1", { name: "zgs", url: { secret: "zgsUrl" }, sha256: sha });
        const script = underRoot(wholeScript({ body: s.install, secrets: { url: `${url}\n` } }), root);
        fs.rmSync(argvLog, { force: true });
        const r = spawnSync("sh", ["-s"], { input: script, encoding: "utf8", env: { ...process.env, PATH: `${shim}:${process.env.PATH}` } });
        assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
        assert.equal(fs.readFileSync(`${root}/opt/nodefleet/zgs/zgs_node`, "utf8"), "#!/bin/sh\necho zgs\n");
        const argv = fs.readFileSync(argvLog, "utf8");
        assert.match(argv, / -K -$/m, "curl read its config from stdin");
        for (const secret of [PASSWORD, TOKEN, "127.0.0.1"]) {
            assert.ok(!argv.includes(secret), `curl's argv holds ${secret}: ${argv}`);
            assert.ok(!`${r.stdout}${r.stderr}`.includes(secret), `the output holds ${secret}`);
        }
        assert.match(r.stdout, /release zgs: downloading the URL of its secret/);
    });

    it("a plain URL with a backslash in its query (the URL parser keeps it there) is requested as written: curl's config quoting", () => {
        const root = fs.mkdtempSync(path.join(tmp, "root-"));
        const url = `http://127.0.0.1:${port}/zgs_node-v1.1.1.tar.gz?a=b\\c`;
        const s = renderRelease("h1", { name: "zgs", url, sha256: sha });
        const r = spawnSync("sh", ["-s"], { input: underRoot(s.install, root), encoding: "utf8" });
        assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
        assert.ok(fs.existsSync(`${root}/opt/nodefleet/zgs/zgs_node`));
        // (http.server's log writes a backslash as two)
        assert.ok(fs.readFileSync(accessLog, "utf8").includes("GET /zgs_node-v1.1.1.tar.gz?a=b\\\\c "), "the request's query is a=b\\c");
    });
});
