// Contract test: what nodefleet renders for the monitoring host, read by the programs that will
// read it, Debian bookworm's own Prometheus 2.42 and Alertmanager 0.25 (lab/prometheus.sh unpacks
// the packages the hosts install): promtool checks the rule file and runs every alert's unit tests
// (each alert fires in one case and stays quiet in another, with its summary and remedy as
// rendered), checks prometheus.yml and lints the health metrics, which node_exporter's textfile
// collector serves without an error (a series written twice it logs as one, on every scrape); amtool checks alertmanager.yml and routes alerts by severity.
// Each check is shown to fail on a mistake of the kind it guards against (a misspelt key, a rule
// that no longer fires). The Grafana dashboard's queries run on a real Prometheus scraping
// node_exporter on this machine and must each return data. What this cannot show: Prometheus scraping real hosts and Alertmanager
// delivering (the e2e tier).
import { before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseFleet } from "../../components/config/fleet";
import { renderRules, type RuleContext } from "../../components/monitoring/rules";
import { renderRuleTests } from "../support/rule-cases";
import { renderAgentFiles } from "../../components/monitoring/agent";
import { DASHBOARD_FILE, dashboardQueries, renderDashboard } from "../../components/monitoring/dashboard";
import { COMETBFT_TARGETS_FILE, EXECUTION_TARGETS_FILE, NODE_TARGETS_FILE, RULES_FILE, TARGETS_DIR, renderAlertmanagerConfig, renderNodeTargets, renderPrometheusConfig, renderValidatorTargets } from "../../components/monitoring/config";
import { secretSource } from "../support/fixtures";
import { ROOT } from "../support/cli";
import { MONITORING_SECRETS, monitoredFleet } from "../support/monitoring";
import { METRICS_MODULE } from "../../status/diagnose";

const CTX: RuleContext = { stack: "prod", healthIntervalSeconds: 30, mounts: ["/data"] };
let bin = "";
let dir = "";

function run(tool: string, args: string[], cwd = dir): { status: number | null; output: string } {
    const r = spawnSync(path.join(bin, tool), args, { cwd, encoding: "utf8", timeout: 300_000 });
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

function write(name: string, text: string): string {
    const file = path.join(dir, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
    return file;
}

describe("monitoring files, read by Debian's Prometheus 2.42 and Alertmanager 0.25", () => {
    before(() => {
        const r = spawnSync("bash", [path.join(ROOT, "lab/prometheus.sh"), "path"], { encoding: "utf8", timeout: 1800_000 });
        assert.equal(r.status, 0, r.stderr);
        bin = r.stdout.trim();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-monitoring-"));
        assert.match(run("promtool", ["--version"]).output, /promtool, version 2\.42\./);
        assert.match(run("amtool", ["--version"]).output, /amtool, version 0\.25\./);
    });

    it("promtool checks the rule file and passes every alert's unit tests", () => {
        write(RULES_FILE, renderRules(CTX));
        write("tests.yml", renderRuleTests(CTX, RULES_FILE));
        const check = run("promtool", ["check", "rules", RULES_FILE]);
        assert.equal(check.status, 0, check.output);
        assert.match(check.output, /SUCCESS: \d+ rules found/);
        const test = run("promtool", ["test", "rules", "tests.yml"]);
        assert.equal(test.status, 0, test.output);
        assert.match(test.output, /SUCCESS/);
    });

    it("the unit tests fail on a rule that no longer fires, or fires too soon, naming the alert", () => {
        write("tests.yml", renderRuleTests(CTX, "broken.rules.yml", (a) => ["NodefleetForkchoice38002", "NodefleetCatchingUp"].includes(a)));
        const rules = renderRules(CTX);
        write("broken.rules.yml", rules.replace('nodefleet_diagnosis{code="forkchoice-38002"} == 1', 'nodefleet_diagnosis{code="forkchoice-38003"} == 1'));
        const never = run("promtool", ["test", "rules", "tests.yml"]);
        assert.notEqual(never.status, 0);
        assert.match(never.output, /NodefleetForkchoice38002: forkchoice-38002 written for 2m fires/);
        const soon = rules.replace(/(alert: NodefleetCatchingUp\n\s+expr: [^\n]+\n\s+for: )10m/, "$10m");
        assert.notEqual(soon, rules);
        write("broken.rules.yml", soon);
        const early = run("promtool", ["test", "rules", "tests.yml"]);
        assert.notEqual(early.status, 0);
        assert.match(early.output, /NodefleetCatchingUp: for less than 10m: quiet/);
    });

    it("promtool checks prometheus.yml with its rule file and the node targets' file beside it; a misspelt key fails, and so does a malformed target", () => {
        const m = parseFleet(monitoredFleet(), secretSource(MONITORING_SECRETS)).spec.monitoring!;
        write(RULES_FILE, renderRules(CTX));
        const hosts = [{ host: "h-storage", address: "192.0.2.10", validators: [] }, { host: "h-validator", address: "192.0.2.12", validators: [{ node: "validator-1", role: "validator", consensusPort: 56660, executionPort: 56661 }] }];
        const targets = renderNodeTargets(m, hosts);
        write(path.join(TARGETS_DIR, NODE_TARGETS_FILE), targets);
        write(path.join(TARGETS_DIR, COMETBFT_TARGETS_FILE), renderValidatorTargets("cometbft", hosts));
        write(path.join(TARGETS_DIR, EXECUTION_TARGETS_FILE), renderValidatorTargets("execution", hosts));
        const text = renderPrometheusConfig(m, "prod");
        write("prometheus.yml", text);
        const ok = run("promtool", ["check", "config", "prometheus.yml"]);
        assert.equal(ok.status, 0, ok.output);
        assert.match(ok.output, /SUCCESS: 1 rule files found/);
        // The shortest scrapeIntervalSeconds the config takes: each scrape's 10 s timeout still fits in it.
        write("prometheus.yml", renderPrometheusConfig({ ...m, scrapeIntervalSeconds: 10 }, "prod"));
        const quick = run("promtool", ["check", "config", "prometheus.yml"]);
        assert.equal(quick.status, 0, quick.output);
        write("prometheus.yml", text);
        // promtool reads the discovery file too: a target that is no host:port is refused.
        write(path.join(TARGETS_DIR, NODE_TARGETS_FILE), targets.replace("192.0.2.10:9100", "192.0.2.10:9100/metrics"));
        const badTarget = run("promtool", ["check", "config", "prometheus.yml"]);
        assert.notEqual(badTarget.status, 0, badTarget.output);
        write(path.join(TARGETS_DIR, NODE_TARGETS_FILE), targets);
        write("prometheus.yml", text.replace("scrape_interval:", "scrape_intervall:"));
        const bad = run("promtool", ["check", "config", "prometheus.yml"]);
        assert.notEqual(bad.status, 0);
        assert.match(bad.output, /field scrape_intervall not found/);
    });

    it("the health metrics of every recorded answer: promtool's linter finds nothing, node_exporter's textfile collector serves them (a series named twice is an error in its log)", async () => {
        const items = (["storage", "sequencer", "validator"] as const).flatMap((role) =>
            Object.values(JSON.parse(fs.readFileSync(path.join(ROOT, "test", "fixtures", "status", `${role}.json`), "utf8")) as Record<string, unknown>).map((answer, i) => ({ node: `${role}-${i + 1}`, role, host: "h", answer })),
        );
        const made = spawnSync("python3", [METRICS_MODULE, "metrics"], { input: JSON.stringify({ at: 1764230000, rows: items }), encoding: "utf8" });
        assert.equal(made.status, 0, made.stderr);
        const lint = spawnSync(path.join(bin, "promtool"), ["check", "metrics"], { input: made.stdout, encoding: "utf8" });
        assert.equal(lint.status, 0, `${lint.stdout}${lint.stderr}`);
        assert.equal(`${lint.stdout}${lint.stderr}`.trim(), "");
        const textDir = fs.mkdtempSync(path.join(dir, "textfile-"));
        fs.writeFileSync(path.join(textDir, "nodefleet.prom"), made.stdout);
        const port = 19100 + (process.pid % 500);
        const exporter = spawn(path.join(bin, "prometheus-node-exporter"), [`--web.listen-address=127.0.0.1:${port}`, "--collector.disable-defaults", "--collector.textfile", `--collector.textfile.directory=${textDir}`], { stdio: ["ignore", "ignore", "pipe"] });
        let log = "";
        exporter.stderr!.on("data", (b: Buffer) => (log += b.toString()));
        try {
            const scrape = async () => {
                for (let i = 0; i < 100; i++) {
                    try {
                        return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
                    } catch {
                        await new Promise((r) => setTimeout(r, 100));
                    }
                }
                throw new Error("node_exporter did not answer");
            };
            const served = await scrape();
            assert.match(served, /^node_textfile_scrape_error 0$/m);
            assert.match(served, /^nodefleet_diagnosis\{code="forkchoice-38002",node="validator-1",role="validator",severity="error"\} 1$/m);
            assert.match(served, /^nodefleet_health_last_run_timestamp_seconds 1\.76423e\+09$/m);
            assert.doesNotMatch(log, /collected before/);
            // A series named twice: node_exporter 1.5 serves one of the two and logs an error on every scrape.
            fs.writeFileSync(path.join(textDir, "nodefleet.prom"), `${made.stdout}nodefleet_node_healthy{node="storage-1",role="storage"} 0\n`);
            await scrape();
            await new Promise((r) => setTimeout(r, 200));
            assert.match(log, /nodefleet_node_healthy.*was collected before with the same name and label values/);
        } finally {
            exporter.kill();
        }
    });

    it("node_exporter 1.5 takes the drop-in's flags (its collectors, the unit filter, the textfile directory); a misspelt flag stops it", async () => {
        const m = parseFleet(monitoredFleet(), secretSource(MONITORING_SECRETS)).spec.monitoring!;
        const plan = parseFleet(monitoredFleet(), secretSource(MONITORING_SECRETS)).hosts[0]!;
        const execStart = renderAgentFiles(plan, m).dropIn.split("\n").filter((l) => l.startsWith("ExecStart=/"))[0]!;
        // systemd's words: plain, or double-quoted (the drop-in quotes nothing that needs an escape).
        assert.doesNotMatch(execStart, /\\/);
        const words = [...execStart.slice("ExecStart=".length).matchAll(/"([^"]*)"|(\S+)/g)].map((w) => w[1] ?? w[2]!);
        assert.equal(words[0], "/usr/bin/prometheus-node-exporter");
        const port = 19600 + (process.pid % 300);
        const textDir = fs.mkdtempSync(path.join(dir, "textfile-"));
        const args = words.slice(1).map((w) => w.replace(/^--web\.listen-address=.*/, `--web.listen-address=127.0.0.1:${port}`).replace(/^--collector\.textfile\.directory=.*/, `--collector.textfile.directory=${textDir}`));
        assert.equal(args.filter((a) => a.startsWith("--web.listen-address=") || a.startsWith("--collector.textfile.directory=")).length, 2);
        const exporter = spawn(path.join(bin, "prometheus-node-exporter"), args, { stdio: ["ignore", "ignore", "pipe"] });
        let log = "";
        exporter.stderr!.on("data", (b: Buffer) => (log += b.toString()));
        try {
            let served = "";
            for (let i = 0; i < 100 && served === ""; i++) {
                try {
                    served = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
                } catch {
                    await new Promise((r) => setTimeout(r, 100));
                }
            }
            assert.match(served, /^node_scrape_collector_success\{collector="textfile"\} 1$/m, log);
            assert.match(served, /^node_scrape_collector_success\{collector="systemd"\} [01]$/m, "the systemd collector is on (it needs systemd's D-Bus: on a host, not here)");
            assert.match(log, /unit-include|Parsed flag --collector\.systemd\.unit-include/i);
        } finally {
            exporter.kill();
        }
        const bad = spawnSync(path.join(bin, "prometheus-node-exporter"), [...args.filter((a) => !a.startsWith("--collector.systemd.unit-include")), "--collector.systemd.unit-includ=x"], { encoding: "utf8", timeout: 30_000 });
        assert.notEqual(bad.status, 0);
        assert.match(bad.stderr, /unknown long flag '--collector\.systemd\.unit-includ'/);
    });

    it("every panel of the Grafana dashboard: its query runs on Prometheus 2.42 scraping node_exporter (host metrics and the health metrics) and returns data; a misspelt metric returns none", async () => {
        const items = (["storage", "sequencer", "validator"] as const).flatMap((role) =>
            Object.values(JSON.parse(fs.readFileSync(path.join(ROOT, "test", "fixtures", "status", `${role}.json`), "utf8")) as Record<string, unknown>).map((answer, i) => ({ node: `${role}-${i + 1}`, role, host: "h", answer })),
        );
        const made = spawnSync("python3", [METRICS_MODULE, "metrics"], { input: JSON.stringify({ at: Math.floor(Date.now() / 1000), rows: items }), encoding: "utf8" });
        assert.equal(made.status, 0, made.stderr);
        const textDir = fs.mkdtempSync(path.join(dir, "textfile-"));
        fs.writeFileSync(path.join(textDir, "nodefleet.prom"), made.stdout);
        const exporterPort = 19300 + (process.pid % 200);
        const prometheusPort = 19500 + (process.pid % 100);
        const data = fs.mkdtempSync(path.join(dir, "tsdb-"));
        // The node job as nodefleet's prometheus.yml has it (a target labelled with its host), scraped every second.
        write("dashboard-prometheus.yml", `global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: node\n    static_configs: [{targets: ["127.0.0.1:${exporterPort}"], labels: {host: runner}}]\n`);
        const exporter = spawn(path.join(bin, "prometheus-node-exporter"), [`--web.listen-address=127.0.0.1:${exporterPort}`, `--collector.textfile.directory=${textDir}`], { stdio: "ignore" });
        const prometheus = spawn(path.join(bin, "prometheus"), [`--config.file=${path.join(dir, "dashboard-prometheus.yml")}`, `--storage.tsdb.path=${data}`, `--web.listen-address=127.0.0.1:${prometheusPort}`], { stdio: ["ignore", "ignore", "pipe"] });
        let log = "";
        prometheus.stderr!.on("data", (b: Buffer) => (log += b.toString()));
        const query = async (expr: string): Promise<{ status: string; data?: { result: unknown[] }; error?: string }> => {
            const url = `http://127.0.0.1:${prometheusPort}/api/v1/query?query=${encodeURIComponent(expr)}`;
            return (await fetch(url)).json() as never;
        };
        // Grafana's variables as it fills them: every host, and a rate window of a few scrapes.
        const asGrafana = (expr: string) => expr.replaceAll("$host", ".*").replaceAll("$__rate_interval", "1m");
        const silent = async (panels: { title: string; expr: string }[]) => {
            const out: string[] = [];
            for (const p of panels) {
                const r = await query(asGrafana(p.expr));
                if (r.status !== "success") out.push(`${p.title}: ${r.error}`);
                else if (r.data!.result.length === 0) out.push(`${p.title}: no data`);
            }
            return out;
        };
        try {
            const deadline = Date.now() + 60_000;
            for (;;) {
                const r = await query('count_over_time(up{job="node"}[1m]) >= 3 and up{job="node"} == 1').catch(() => undefined);
                if (r?.status === "success" && r.data!.result.length === 1) break;
                assert.ok(Date.now() < deadline, `Prometheus did not scrape node_exporter three times within 60 s:\n${log.slice(-2000)}`);
                await new Promise((r) => setTimeout(r, 500));
            }
            const panels = dashboardQueries();
            assert.ok(panels.length >= 14, `${panels.length} panels`);
            assert.deepEqual(await silent(panels), []);
            // The check sees a mistake: a misspelt metric is valid PromQL that finds nothing.
            const height = panels.find((p) => p.title === "Height")!;
            assert.deepEqual(await silent([{ title: "Height", expr: height.expr.replace("nodefleet_node_height", "nodefleet_node_heigth") }]), ["Height: no data"]);
            assert.match((await silent([{ title: "Height", expr: `${height.expr})` }]))[0]!, /^Height: .*parse error/);
        } finally {
            prometheus.kill();
            exporter.kill();
        }
        // What Grafana imports: its JSON model, each panel with its query, the data source an input.
        const model = JSON.parse(renderDashboard());
        assert.deepEqual(model.__inputs.map((i: any) => i.name), ["DS_PROMETHEUS"]);
        const exprs = model.panels.filter((p: any) => p.type !== "row").map((p: any) => p.targets[0].expr);
        assert.deepEqual(exprs, dashboardQueries().map((p) => p.expr));
        assert.equal(fs.readFileSync(path.join(ROOT, DASHBOARD_FILE), "utf8"), renderDashboard(), `${DASHBOARD_FILE} is stale: run scripts/docs.sh`);
    });

    it("amtool checks alertmanager.yml with a receiver of each kind; a misspelt key fails; alerts route by severity", () => {
        const m = parseFleet(monitoredFleet(), secretSource(MONITORING_SECRETS)).spec.monitoring!;
        const text = renderAlertmanagerConfig(m, MONITORING_SECRETS);
        write("alertmanager.yml", text);
        const ok = run("amtool", ["check-config", "alertmanager.yml"]);
        assert.equal(ok.status, 0, ok.output);
        assert.match(ok.output, /6 receivers/);
        const route = (severity: string) => run("amtool", ["config", "routes", "test", "--config.file=alertmanager.yml", `severity=${severity}`, "alertname=NodefleetServiceDown", "host=h-storage"]).output.split("\n")[0]!.trim();
        assert.equal(route("error"), "ops-hook,ops-slack,ops-telegram,ops-discord,ops-mail");
        assert.equal(route("warning"), "ops-hook,ops-telegram,ops-discord,ops-mail", "ops-slack takes errors only");
        write("alertmanager.yml", text.replace("bot_token:", "bot_tokn:"));
        const bad = run("amtool", ["check-config", "alertmanager.yml"]);
        assert.notEqual(bad.status, 0);
        assert.match(bad.output, /field bot_tokn not found/);
    });
});
