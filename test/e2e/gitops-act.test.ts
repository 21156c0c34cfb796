// E2E tier: the workflows of .github/workflows, unmodified, run by a real runner. act (nektos/act,
// lab/act.sh) runs them on a fresh lab host booted from the runner's image (lab/runner.sh: the lab's
// Debian with git, Node and npm, as a hosted runner image has them), as its user `runner` (uid 1001,
// passwordless sudo), jobs on the host itself (`-P ubuntu-24.04=-self-hosted`, no Docker), the
// pinned actions from ../shared/actions (`--local-repository`). The workflows install Pulumi as
// they do on GitHub: the stock CLI from a stand-in of Pulumi's download site on the lab's runner
// machine (test/support/pulumi-mirror.ts), the command provider by `pulumi plugin install`. The
// repository is this checkout's committed files with a team's lab stacks in place of the examples:
// dev-team, staging, and prod in two shards (prod-a, prod-b), their state in one S3 bucket (moto,
// lab/s3.sh), their secrets in act's secret file, their hosts the scripted SSH hosts
// (lab/sim/scripted-host: real SSH that runs nothing and answers the drift check as the test says;
// what the steps and the drift check do on real hosts, test/e2e/dev-stack.test.ts shows).
// What act cannot stand in for: GitHub's environments (act ignores `environment:`, so neither the
// reviewers of staging and prod nor environment-scoped secrets are exercised: every job reads the
// one secret file), its API (the pull request comment goes to a stand-in gh, lab/runner/gh), and
// its schedule (the drift workflow is dispatched).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { ROOT, sh } from "../support/cli";
import { onVm } from "../support/lab";
import { freePort, until } from "../support/process";
import { ScriptedHosts, onScriptedHosts } from "../support/scripted-hosts";
import { makePulumiMirror } from "../support/pulumi-mirror";

const RUNNER = "dev-5";
const STATE = process.env.NODEFLEET_STATE ?? path.join(ROOT, ".state/e2e");
// The lab's scripts (lab/vm.sh, lab/runner.sh) take the tier's state from here, run alone or in the lane.
process.env.NODEFLEET_STATE = STATE;
const RUNNER_ROOT = path.join(STATE, "vm", RUNNER, "root");
const HOME = path.join(RUNNER_ROOT, "home/runner");
const RUNNER_UID = 1001;
/** The lab's runner machine as its hosts reach it (lab/vm.sh: its loopback services at 10.0.2.2). */
const GATEWAY = "10.0.2.2";
const BUCKET = "nodefleet-gitops";
const DEV_CONFIG = fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
const STACKS = ["dev-team", "staging", "prod-a", "prod-b"] as const;
type Stack = (typeof STACKS)[number];
const DRIFT_CHECK = "nodefleet's drift check of a host";
/** The actions the workflows pin, by commit (../shared/actions/README.md). */
const ACTIONS = [
    ["actions/checkout@11d5960a326750d5838078e36cf38b85af677262", "actions-checkout-v4.4.0"],
    ["actions/setup-node@49933ea5288caeca8642d1e84afbd3f7d6820020", "actions-setup-node-v4.4.0"],
] as const;

/** One line of act's --json log. */
interface ActLine { jobID?: string; job?: string; matrix?: Record<string, string>; msg?: string; jobResult?: string; stepResult?: string; time?: string; level?: string }

describe("the workflows run by act on a lab runner, as its non-root user", { timeout: 40 * 60_000 }, () => {
    const hosts = Object.fromEntries(STACKS.map((s) => [s, new ScriptedHosts()])) as Record<Stack, ScriptedHosts>;
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "gitops-act-"));
    const children: ChildProcess[] = [];
    let repo = "";
    let runs = 0;

    /** A file of the runner's home, written as the runner's user's. */
    function writeHome(rel: string, text: string, mode = 0o644): void {
        const file = path.join(HOME, rel);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, text, { mode });
        sh("chown", ["-R", `${RUNNER_UID}:${RUNNER_UID}`, path.join(HOME, rel.split("/")[0]!)]);
    }

    /** A command as the runner's user on the runner host, in the repository (act's --json log runs to hundreds of KB). */
    const asRunner = (script: string, timeoutMs = 20 * 60_000) => onVm(RUNNER, `su - runner -c ${shellQuote(`cd ~/nodefleet && ${script}`)}`, true, { timeoutMs, maxBuffer: 256 << 20 });

    /** act runs one workflow on an event: its --json log, parsed, and its exit status. */
    function act(event: string, workflow: string, payload: object): { status: number | null; lines: ActLine[]; text: string } {
        writeHome(`events/${workflow}.json`, JSON.stringify(payload));
        const flags = [
            event, "-W", `.github/workflows/${workflow}.yml`, "-e", `~/events/${workflow}.json`,
            "-P", "ubuntu-24.04=-self-hosted", "--secret-file", "~/.secrets", "--var-file", "~/.vars", "--json",
            ...ACTIONS.flatMap(([uses, dir]) => ["--local-repository", `${uses}=/home/runner/actions/${dir}`]),
        ];
        process.stderr.write(`[act] ${workflow}.yml on ${event}\n`);
        const r = asRunner(`/opt/act/act ${flags.join(" ")}`);
        // Kept past the run (the tier's state directory) for a failure's reading.
        fs.mkdirSync(path.join(STATE, "act-logs"), { recursive: true });
        fs.writeFileSync(path.join(STATE, "act-logs", `${++runs}-${workflow}.jsonl`), r.output);
        const lines = r.output.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as ActLine);
        for (const [job, result] of results(lines)) process.stderr.write(`[act] ${workflow}: ${job}: ${result}\n`);
        const text = lines.map((l) => `[${l.job ?? ""}${l.matrix?.stack ? ` ${l.matrix.stack}` : ""}] ${l.msg ?? ""}`).join("\n");
        return { status: r.status, lines, text };
    }

    /**
     * Each job's result: "JOBID STACK" (a job of a matrix by its stack) → success/failure. act gives
     * all of a matrix's jobs one result, the worst of them (its log's jobResult), so each job's own is
     * read from its steps': failure when one of its steps failed.
     */
    function results(lines: ActLine[]): Map<string, string> {
        const out = new Map<string, string>();
        for (const l of lines.filter((x) => x.jobID && (x.stepResult || x.jobResult))) {
            const key = `${l.jobID}${l.matrix?.stack ? ` ${l.matrix.stack}` : ""}`;
            if (l.stepResult === "failure") out.set(key, "failure");
            else if (!out.has(key)) out.set(key, "success");
        }
        return out;
    }

    /** The times of a job's first and last log line. */
    function span(lines: ActLine[], jobID: string, stack?: string): [number, number] {
        const t = lines.filter((l) => l.jobID === jobID && (!stack || l.matrix?.stack === stack) && l.time).map((l) => Date.parse(l.time!));
        assert.ok(t.length > 0, `no log line of ${jobID} ${stack ?? ""}`);
        return [Math.min(...t), Math.max(...t)];
    }

    /** What each stack's hosts say to the drift check. */
    function answerDrift(stack: Stack, drift: { group: string; item: string; change: string }[]): void {
        fs.writeFileSync(path.join(hosts[stack].dir, "answer"), JSON.stringify({ [DRIFT_CHECK]: JSON.stringify({ records: 12, drift }) }));
    }

    /** git in the runner's repository, as the runner's user. */
    function git(...args: string[]): void {
        const r = asRunner(`git ${args.map(shellQuote).join(" ")}`);
        assert.equal(r.status, 0, r.output);
    }

    /** The first line of each script a stack's hosts ran. */
    function ran(stack: Stack): string[] {
        const file = path.join(hosts[stack].dir, "log");
        return fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { line: string }).line) : [];
    }

    /** A lab stack's file: the dev fleet on its scripted hosts, reached from the runner at the lab's gateway. */
    function stackFile(stack: Stack, ports: number[], hostKeys: string[]): string {
        const doc = parseYaml(onScriptedHosts(DEV_CONFIG, ports).replaceAll("address: 127.0.0.1", `address: ${GATEWAY}`)) as { config: Record<string, any> };
        const fleet = doc.config["nodefleet:fleet"];
        for (const [i, host] of Object.values<Record<string, unknown>>(fleet.hosts).entries()) {
            delete host.sshPrivateKeyFile;
            host.sshPrivateKeySecret = "sshKey"; // from the secret SSH_KEY (scripts/ci/stack.sh)
            if (stack.startsWith("prod")) host.hostKey = hostKeys[i]; // prod's policy: pinned
        }
        for (const r of Object.values<Record<string, unknown>>(fleet.releases)) if (r.sha256File) r.sha256File = "releases/SHA256SUMS";
        if (stack !== "dev-team") fleet.hardwareCheck = "enforce"; // staging's and prod's policy
        return `# A lab stack of the act scenario (test/e2e/gitops-act.test.ts).\n${stringifyYaml(doc, { lineWidth: 0 })}`;
    }

    before(async () => {
        // Pulumi's download site, and the state bucket, on the runner machine's loopback.
        const mirror = path.join(work, "mirror");
        makePulumiMirror(mirror);
        const mirrorPort = await freePort();
        children.push(spawn("python3", ["-m", "http.server", "--bind", "127.0.0.1", "--directory", mirror, String(mirrorPort)], { stdio: "ignore" }));
        await until("the Pulumi mirror", 30, async () => ((await fetch(`http://127.0.0.1:${mirrorPort}/sdk/`, { method: "HEAD" })).ok ? true : undefined));
        const moto = sh("bash", [path.join(ROOT, "lab/s3.sh"), "path"]).stdout.trim();
        const s3Port = await freePort();
        children.push(spawn(moto, ["-H", "127.0.0.1", "-p", String(s3Port)], { stdio: "ignore" }));
        await until("moto's S3 server", 30, async () => ((await fetch(`http://127.0.0.1:${s3Port}/${BUCKET}`, { method: "PUT" })).ok ? true : undefined));

        // The runner: a fresh host from the runner's image.
        spawnSync("bash", [path.join(ROOT, "lab/vm.sh"), "stop", RUNNER], { stdio: "inherit" });
        fs.rmSync(path.join(STATE, "vm", RUNNER), { recursive: true, force: true });
        const boot = spawnSync("bash", [path.join(ROOT, "lab/runner.sh"), "start", RUNNER], { stdio: ["ignore", "ignore", "inherit"] });
        assert.equal(boot.status, 0, "the runner host booted");

        // The team's repository: this checkout's committed files, the examples' stacks replaced by the lab's.
        repo = path.join(work, "nodefleet");
        const files = sh("git", ["-C", ROOT, "ls-files", "-z"]).stdout.split("\0").filter(Boolean);
        for (const f of files) {
            if (!fs.existsSync(path.join(ROOT, f))) continue;
            fs.mkdirSync(path.dirname(path.join(repo, f)), { recursive: true });
            fs.cpSync(path.join(ROOT, f), path.join(repo, f), { verbatimSymlinks: true });
        }
        for (const f of ["Pulumi.staging.yaml", "Pulumi.prod.yaml"]) fs.rmSync(path.join(repo, f));
        const sshKey = path.join(work, "id_ed25519");
        sh("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", sshKey]);
        for (const stack of STACKS) {
            const ports = await hosts[stack].listen(2);
            const keys = ports.map((p) => sh("ssh-keyscan", ["-t", "ed25519", "-p", String(p), "127.0.0.1"]).stdout.trim().split(" ").slice(1).join(" "));
            fs.writeFileSync(path.join(repo, `Pulumi.${stack}.yaml`), stackFile(stack, ports, keys));
            answerDrift(stack, []);
        }
        fs.mkdirSync(path.join(repo, "releases"));
        fs.writeFileSync(path.join(repo, "releases/SHA256SUMS"), ["aristotle-v1.0.6", "zgs_node-v1.1.0", "aztec-v4.1.2"].map((n, i) => `${String(i + 1).repeat(64)}  ${n}.tar.gz\n`).join(""));
        const git = (...args: string[]) => sh("git", ["-C", repo, "-c", "user.name=lab", "-c", "user.email=lab@nodefleet.invalid", ...args]);
        git("init", "-q", "-b", "main");
        git("add", "-A");
        git("commit", "-q", "-m", "the team's fleet");
        git("update-ref", "refs/remotes/origin/main", "HEAD");
        fs.cpSync(repo, path.join(HOME, "nodefleet"), { recursive: true, verbatimSymlinks: true });

        // The runner's side: act, the pinned actions, npm's cache (the runner has no route out), act's
        // settings, the secrets and variables a repository's settings give the workflows.
        const actBin = sh("bash", [path.join(ROOT, "lab/act.sh")]).stdout.trim();
        fs.mkdirSync(path.join(RUNNER_ROOT, "opt/act"), { recursive: true });
        fs.copyFileSync(actBin, path.join(RUNNER_ROOT, "opt/act/act"));
        fs.chmodSync(path.join(RUNNER_ROOT, "opt/act/act"), 0o755);
        fs.mkdirSync(path.join(HOME, "actions"), { recursive: true });
        for (const [, dir] of ACTIONS) sh("tar", ["-xzf", path.resolve(ROOT, `../shared/actions/${dir}.tar.gz`), "-C", path.join(HOME, "actions")]);
        const npmCache = path.join(os.homedir(), ".npm/_cacache");
        if (fs.existsSync(npmCache)) fs.cpSync(npmCache, path.join(HOME, ".npm/_cacache"), { recursive: true });
        writeHome(".npmrc", "offline=true\n");
        writeHome(".actrc", "-P ubuntu-24.04=-self-hosted\n");
        const key = fs.readFileSync(sshKey, "utf8").trim().replaceAll("\n", "\\n");
        writeHome(".secrets", [
            `PULUMI_BACKEND_URL=s3://${BUCKET}?endpoint=${encodeURIComponent(`http://${GATEWAY}:${s3Port}`)}&use_path_style=true&region=us-east-1`,
            "PULUMI_CONFIG_PASSPHRASE=nodefleet-dev",
            "AWS_ACCESS_KEY_ID=nodefleet-test",
            "AWS_SECRET_ACCESS_KEY=nodefleet-test",
            `SSH_KEY="${key}"`,
            "",
        ].join("\n"), 0o600);
        writeHome(".vars", [`PULUMI_DOWNLOAD_BASE=http://${GATEWAY}:${mirrorPort}/sdk`, `PULUMI_PLUGIN_SERVER=http://${GATEWAY}:${mirrorPort}/plugins`, ""].join("\n"));
        sh("chown", ["-R", `${RUNNER_UID}:${RUNNER_UID}`, HOME, path.join(RUNNER_ROOT, "opt/act")]);
    });

    after(() => {
        for (const c of children) c.kill();
        for (const h of Object.values(hosts)) h.dispose();
        spawnSync("bash", [path.join(ROOT, "lab/vm.sh"), "stop", RUNNER], { stdio: "inherit" });
        fs.rmSync(work, { recursive: true, force: true });
    });

    /** The runner's repository: a commit of `edit`'s change to a stack's file. */
    function commitStack(stack: Stack, message: string, edit: (text: string) => string): void {
        const file = path.join(HOME, `nodefleet/Pulumi.${stack}.yaml`);
        const before = fs.readFileSync(file, "utf8");
        const after = edit(before);
        assert.notEqual(after, before, `${message}: no change to Pulumi.${stack}.yaml`);
        fs.writeFileSync(file, after);
        const r = asRunner(`git -c user.name=lab -c user.email=lab@nodefleet.invalid commit -qam ${shellQuote(message)}`);
        assert.equal(r.status, 0, r.output);
    }

    it("a pull request: the stacks it touches previewed with the policy pack, the diff posted on it; a change against a mandatory policy is red", () => {
        commitStack("staging", "staging: a reviewed change", (t) => t.replace("hardwareCheck: enforce", "hardwareCheck: enforce # reviewed"));
        const r = act("pull_request", "preview", { pull_request: { number: 7, base: { ref: "main" }, head: { ref: "change" } } });
        assert.equal(r.status, 0, r.text.slice(-6000));
        assert.deepEqual([...results(r.lines)].sort(), [["preview staging", "success"], ["stacks", "success"]]);
        const comment = fs.readFileSync(path.join(HOME, "gh/pr-7-comment-1.md"), "utf8");
        assert.match(comment, /^### pulumi preview: `staging`$/m);
        assert.match(comment, /^ {4}\+ 42 to create$/m);
        assert.ok(/Policy Packs run:\n\s+Name\s+Version\n\s+nodefleet\|local\|/.test(comment), `the preview ran the policy pack:\n${comment.slice(-800)}`);
        // The job ran as the runner's user, with the Pulumi it installed in that user's home.
        const who = asRunner("id -u && stat -c %U ~/.pulumi/bin/pulumi && ~/.pulumi/bin/pulumi version");
        assert.match(who.output, /^1001\nrunner\nv3\.248\.0$/m);

        // A shard of prod whose host key is no longer pinned: prod's policy (the shard has no config of its own) stops it.
        git("reset", "-q", "--hard", "origin/main");
        commitStack("prod-b", "prod-b: a host key dropped", (t) => t.replace(/^ +hostKey: .*\n/m, ""));
        const red = act("pull_request", "preview", { pull_request: { number: 8, base: { ref: "main" }, head: { ref: "unpinned" } } });
        assert.notEqual(red.status, 0);
        assert.deepEqual([...results(red.lines)].sort(), [["preview prod-b", "failure"], ["stacks", "success"]]);
        const posted = fs.readFileSync(path.join(HOME, "gh/pr-8-comment-1.md"), "utf8");
        assert.ok(/\[mandatory\]\s+unpinned-host-key/.test(posted), `prod's policy, mandatory:\n${posted.slice(-1500)}`);
        git("reset", "-q", "--hard", "origin/main");
    });

    it("a merge: dev, then staging, then prod's shards side by side; a failing shard stops no other, and goes through on the next merge", () => {
        fs.writeFileSync(path.join(hosts["prod-b"].dir, "fail"), "nodefleet hardware preflight for host dev-1:\n");
        const r = act("push", "deploy", { ref: "refs/heads/main" });
        assert.notEqual(r.status, 0, "a failed job fails the run");
        assert.deepEqual(Object.fromEntries(results(r.lines)), { stacks: "success", "dev dev-team": "success", "staging staging": "success", "prod prod-a": "success", "prod prod-b": "failure" });
        const [, devEnd] = span(r.lines, "dev", "dev-team");
        const [stagingStart, stagingEnd] = span(r.lines, "staging", "staging");
        assert.ok(devEnd <= stagingStart, "staging started after dev ended");
        for (const shard of ["prod-a", "prod-b"]) assert.ok(stagingEnd <= span(r.lines, "prod", shard)[0], `${shard} started after staging ended`);
        assert.match(r.text, /scripted failure: nodefleet hardware preflight for host dev-1:/);
        // Each stack's up ran on its own hosts: prod-a's brought its every node up.
        assert.ok(ran("prod-a").some((l) => l.includes("validator-1")), "prod-a's hosts ran its nodes' steps");

        fs.rmSync(path.join(hosts["prod-b"].dir, "fail"));
        const again = act("push", "deploy", { ref: "refs/heads/main" });
        assert.equal(again.status, 0, again.text.slice(-6000));
        assert.deepEqual(Object.fromEntries(results(again.lines)), { stacks: "success", "dev dev-team": "success", "staging staging": "success", "prod prod-a": "success", "prod prod-b": "success" });
    });

    it("the drift run: red on a hand change on a host, naming it for its stack alone; green once it is put back", () => {
        const clean = act("workflow_dispatch", "drift", {});
        assert.equal(clean.status, 0, clean.text.slice(-6000));
        assert.deepEqual(Object.fromEntries(results(clean.lines)), { stacks: "success", "drift dev-team": "success", "drift staging": "success", "drift prod-a": "success", "drift prod-b": "success" });

        answerDrift("staging", [{ group: "storage-1.configure", item: "/data/storage-1/run/config.toml", change: "content changed" }]);
        const red = act("workflow_dispatch", "drift", {});
        assert.notEqual(red.status, 0);
        assert.deepEqual(Object.fromEntries(results(red.lines)), { stacks: "success", "drift dev-team": "success", "drift staging": "failure", "drift prod-a": "success", "drift prod-b": "success" });
        assert.match(red.text, /::error title=drift on staging::host dev-1: \/data\/storage-1\/run\/config\.toml: content changed \[storage-1\.configure\]/);
        assert.doesNotMatch(red.text, /::error title=drift on (dev-team|prod-a|prod-b)::/);

        answerDrift("staging", []);
        const green = act("workflow_dispatch", "drift", {});
        assert.equal(green.status, 0, green.text.slice(-6000));
    });
});

function shellQuote(s: string): string {
    return `'${s.replaceAll("'", `'\\''`)}'`;
}
