// The monitoring section of the config, the alert rules and the monitoring host's files: pure.
// What this cannot prove: that Prometheus and Alertmanager read the files as meant (the cli tier's
// contract test runs promtool and amtool on them), and that the alerts fire on real faults (e2e).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseFleet } from "../../components/config/fleet";
import { alertNames, HISTORY_ALERTS } from "../../components/config/monitoring";
import { FAULT_TABLE, FAULTS } from "../../components/config/faults";
import { SPEC_ERROR_ROWS } from "../../components/monitoring/faults";
import { alertRules, renderRules, type RuleContext } from "../../components/monitoring/rules";
import { renderRuleTests, ruleCases } from "../support/rule-cases";
import { renderAlertmanagerConfig, renderNodeTargets, renderPrometheusConfig, renderValidatorTargets, scrapedValidators } from "../../components/monitoring/config";
import { golden, verifyUnits } from "../support/golden";
import { renderAgentFiles } from "../../components/monitoring/agent";
import { checkArgv } from "../../components/health/checks";
import { spawnSync } from "node:child_process";
import { METRICS_MODULE } from "../../status/diagnose";
import { diagnosisCodes } from "../support/diagnosis-codes";
import { configIssues, secretSource } from "../support/fixtures";
import { MONITORING_SECRETS, SLACK_URL, TG_TOKEN, monitoredFleet } from "../support/monitoring";

const ROOT = path.resolve(__dirname, "../../..");
const issues = (f: unknown, secrets: Record<string, string> = MONITORING_SECRETS, plain: string[] = []) => configIssues(f, secrets, plain);

const CTX: RuleContext = { stack: "prod", healthIntervalSeconds: 30, mounts: ["/data"] };

describe("monitoring: the config section", () => {
    it("a fleet with monitoring and a receiver of each kind parses, with the Debian packages' ports and loopback by default", () => {
        const m = parseFleet(monitoredFleet(), secretSource(MONITORING_SECRETS)).spec.monitoring!;
        assert.equal(m.listenAddress, "127.0.0.1");
        assert.deepEqual([m.prometheusPort, m.alertmanagerPort, m.nodeExporterPort], [9090, 9093, 9100]);
        assert.equal(m.retention, "15d");
        assert.deepEqual(m.receivers.map((r) => r.kind), ["webhook", "slack", "telegram", "discord", "email"]);
    });

    it("a URL or a token pasted where a secret key's name goes is refused without being echoed", () => {
        for (const [field, value] of [["urlSecret", "http://203.0.113.9:9099/alerts"], ["urlSecret", SLACK_URL]] as const) {
            const f = monitoredFleet();
            f.monitoring.receivers[0][field] = value;
            const got = issues(f);
            assert.equal(got.length, 1, got.join("\n"));
            assert.match(got[0]!, /^monitoring\.receivers\[0\]\.urlSecret: secret given as a plain value/);
            assert.ok(!got[0]!.includes(value) && !got[0]!.includes("hooks.slack"), got[0]);
        }
        const f = monitoredFleet();
        f.monitoring.receivers[2].botTokenSecret = TG_TOKEN;
        const got = issues(f);
        assert.match(got.join("\n"), /monitoring\.receivers\[2\]\.botTokenSecret: secret given as a plain value/);
        assert.ok(!got.join("\n").includes("AAHdq"), "the token is not echoed");
    });

    it("the secret a receiver names must be set, encrypted, and of its kind's format; a bad value is never echoed", () => {
        const { tgToken: _, ...missing } = MONITORING_SECRETS;
        assert.match(issues(monitoredFleet(), missing).join("\n"), /monitoring\.receivers\[2\]\.botTokenSecret: the config key it names is not set/);
        assert.match(issues(monitoredFleet(), MONITORING_SECRETS, ["slackUrl"]).join("\n"), /monitoring\.receivers\[1\]\.apiUrlSecret: the config key it names is stored in plain text/);
        const bad = issues(monitoredFleet(), { ...MONITORING_SECRETS, tgToken: "hunter2-not-a-token", slackUrl: "ftp://hooks.example/x" });
        assert.match(bad.join("\n"), /monitoring\.receivers\[2\]\.botTokenSecret: the secret it names: not a Telegram bot token/);
        assert.match(bad.join("\n"), /monitoring\.receivers\[1\]\.apiUrlSecret: the secret it names: /);
        assert.ok(!bad.join("\n").includes("hunter2") && !bad.join("\n").includes("hooks.example"), bad.join("\n"));
    });

    it("the monitoring host and the addresses name hosts of the fleet; a host only this machine reaches needs its address", () => {
        const f = monitoredFleet();
        f.monitoring.host = "h-nowhere";
        f.monitoring.addresses = { "h-elsewhere": "10.0.0.9" };
        const got = issues(f).join("\n");
        assert.match(got, /monitoring\.host: no host named "h-nowhere" under hosts \(known: h-storage, h-sequencer, h-validator\)/);
        assert.match(got, /monitoring\.addresses\.h-elsewhere: no host named "h-elsewhere"/);
        const local = monitoredFleet();
        local.hosts["h-validator"].address = "127.0.0.1";
        local.hosts["h-validator"].port = 2202;
        assert.match(issues(local).join("\n"), /monitoring\.addresses\.h-validator: required: host h-validator's address "127\.0\.0\.1" is one only this machine reaches it at/);
        local.monitoring.addresses = { "h-validator": "10.77.0.12" };
        assert.deepEqual(issues(local), []);
        const named = monitoredFleet();
        named.hosts["h-sequencer"].address = "seq.example.org";
        assert.match(issues(named).join("\n"), /monitoring\.addresses\.h-sequencer: required: .* is not an IPv4 address/);
    });

    it("the web UIs: loopback by default; another address needs ranges, never the world", () => {
        const f = monitoredFleet();
        f.monitoring.listenAddress = "0.0.0.0";
        assert.match(issues(f).join("\n"), /monitoring\.webAllowedCidrs: required when listenAddress \(0\.0\.0\.0\) is not loopback/);
        f.monitoring.webAllowedCidrs = ["0.0.0.0/1", "128.0.0.0/1"];
        assert.match(issues(f).join("\n"), /monitoring\.webAllowedCidrs: The monitoring web UIs must not be open to the world/);
        f.monitoring.webAllowedCidrs = ["198.51.100.0/24"];
        assert.deepEqual(issues(f), []);
        const g = monitoredFleet();
        g.monitoring.webAllowedCidrs = ["198.51.100.0/24"];
        assert.match(issues(g).join("\n"), /monitoring\.webAllowedCidrs: means nothing while listenAddress is loopback/);
    });

    it("receiver names are unique; e-mail's user and password go together; the kinds are named", () => {
        const f = monitoredFleet();
        f.monitoring.receivers[1].name = "ops-hook";
        assert.match(issues(f).join("\n"), /monitoring\.receivers\[1\]\.name: duplicate receiver name "ops-hook" \(also monitoring\.receivers\[0\]\)/);
        const g = monitoredFleet();
        delete g.monitoring.receivers[4].authUsername;
        assert.match(issues(g).join("\n"), /monitoring\.receivers\[4\]\.authUsername: authUsername and authPasswordSecret go together/);
        const h = monitoredFleet();
        h.monitoring.receivers[0].kind = "pagerduty";
        assert.match(issues(h).join("\n"), /monitoring\.receivers\[0\]\.kind: kind must be one of webhook, slack, telegram, discord, email/);
    });

    it("the health timer's interval and each command's timeout are whole seconds in their ranges", () => {
        for (const [key, value, why] of [
            ["healthTimeoutSeconds", 0, /monitoring\.healthTimeoutSeconds: .*(>=5|greater than or equal to 5)/i],
            ["healthTimeoutSeconds", 301, /monitoring\.healthTimeoutSeconds: .*(<=300|less than or equal to 300)/i],
            ["healthTimeoutSeconds", "60", /monitoring\.healthTimeoutSeconds: expected a number, got the string "60"/],
            ["healthIntervalSeconds", 2.5, /monitoring\.healthIntervalSeconds: expected a whole number, got the number 2\.5/],
            // Below 10 s a scrape could outlast its interval (each may take 10 s): Prometheus refuses that config.
            ["scrapeIntervalSeconds", 5, /monitoring\.scrapeIntervalSeconds: .*(>=10|greater than or equal to 10)/i],
            ["scrapeIntervalSeconds", 301, /monitoring\.scrapeIntervalSeconds: .*(<=300|less than or equal to 300)/i],
            ["scrapeIntervalSeconds", "15s", /monitoring\.scrapeIntervalSeconds: expected a number, got the string "15s"/],
        ] as const) {
            const f = monitoredFleet();
            f.monitoring[key] = value;
            assert.match(issues(f).join("\n"), why, `${key}: ${value}`);
        }
    });

    it("alertFor: an alert's `for` changed by its name; a name nodefleet has no alert for, or a duration without a unit, is refused naming the key", () => {
        const f = monitoredFleet();
        f.monitoring.alertFor = { NodefleetServiceDown: "30s", NodefleetDiskAlmostFull: "0s" };
        assert.deepEqual(parseFleet(f, secretSource(MONITORING_SECRETS)).spec.monitoring!.alertFor, { NodefleetServiceDown: "30s", NodefleetDiskAlmostFull: "0s" });
        for (const [alertFor, why] of [
            [{ NodefleetServiceDwn: "30s" }, /monitoring\.alertFor\.NodefleetServiceDwn: nodefleet has no such alert \(its alerts are listed in docs\/monitoring\.md\)/],
            [{ NodefleetServiceDown: "30" }, /monitoring\.alertFor\.NodefleetServiceDown: a whole number and a unit, s, m or h/],
            [{ NodefleetServiceDown: "1d" }, /monitoring\.alertFor\.NodefleetServiceDown: a whole number and a unit, s, m or h/],
            [{ ServiceDown: "1m" }, /monitoring\.alertFor(\.ServiceDown)?: .*an alert's name/],
        ] as const) {
            const g = monitoredFleet();
            g.monitoring.alertFor = alertFor;
            const got = issues(g);
            assert.equal(got.length, 1, got.join("\n"));
            assert.match(got[0]!, why, JSON.stringify(alertFor));
        }
    });

    it("node_exporter's port on every host and Prometheus's on the monitoring host are checked against the nodes' ports", () => {
        const f = monitoredFleet();
        f.nodes[0].storage.rpcPort = 9100; // the storage node on h-storage, the monitoring host
        f.monitoring.prometheusPort = 9100;
        const got = issues(f).join("\n");
        assert.match(got, /nodes\[0\]: port 9100\/tcp \(storage RPC\) is already used by monitoring\.(nodeExporterPort|prometheusPort) on host h-storage/);
        assert.match(got, /monitoring: prometheusPort, alertmanagerPort and nodeExporterPort must differ \(9100, 9093, 9100\)/);
    });
});

describe("monitoring: the alert rules", () => {
    it("one fault table: every code nodefleet status or a rollout gate can report is in hostfiles/faults.json, and each has exactly one alert with the table's remedy (host-unreachable and the gate's not-committing none: NodefleetHostDown, NodefleetHeightStalled)", () => {
        const codes = diagnosisCodes();
        assert.ok(codes.size >= 25, `${codes.size} codes`);
        assert.deepEqual(Object.keys(FAULT_TABLE).sort(), [...codes].sort(), "the table holds exactly the codes the diagnosis table reports");
        const rules = alertRules(CTX);
        for (const [code, entry] of Object.entries(FAULT_TABLE)) {
            const alerts = rules.filter((r) => r.code === code);
            if (entry.alert === false) {
                assert.deepEqual(alerts, [], `${code}: status alone`);
                assert.ok(entry.note, `${code}: the table says what alerts instead`);
            } else {
                assert.equal(alerts.length, 1, `${code}: one alert`);
                assert.equal(alerts[0]!.remedy, entry.remedy, `${code}: the alert's remedy is the table's`);
                assert.equal(alerts[0]!.severity, entry.severity, `${code}: its severity too`);
            }
        }
        assert.deepEqual(FAULTS.map((f) => f.code).sort(), [...codes].filter((c) => !["host-unreachable", "not-committing"].includes(c)).sort());
        for (const f of FAULTS) assert.ok(rules.some((r) => r.code === f.code && r.expr === `nodefleet_diagnosis{code="${f.code}"} == 1`), f.code);
        assert.ok(rules.some((r) => r.alert === "NodefleetHostDown"));
        assert.equal(new Set(rules.map((r) => r.alert)).size, rules.length, "alert names are unique");
    });

    it("every row of the spec's error table has an alert, each row of the table once", () => {
        const spec = fs.readFileSync(path.join(ROOT, "docs", "spec.md"), "utf8");
        const table = spec.slice(spec.indexOf("## §7 The error table"), spec.indexOf("## §8"));
        const rows = [...table.matchAll(/^\| ([^|]+?) \| [^|]+ \| [^|]+ \|$/gm)].map((m) => m[1]!).filter((r) => !r.startsWith("error ") && !/^-+$/.test(r));
        assert.equal(rows.length, 8);
        assert.deepEqual(SPEC_ERROR_ROWS.map((r) => r.row).sort(), rows.map((r) => r.replace(/^(-38002 Invalid forkchoice state).*/, "$1")).sort());
        const codes = new Set(FAULTS.map((f) => f.code));
        for (const r of SPEC_ERROR_ROWS) for (const c of r.codes) assert.ok(codes.has(c), `${r.row}: ${c}`);
        for (const f of FAULTS.filter((f) => f.specRow)) assert.ok(SPEC_ERROR_ROWS.some((r) => r.row === f.specRow && r.codes.includes(f.code)), f.code);
    });

    it("every nodefleet_* metric a rule reads is one the health module writes, with the labels the rule matches", () => {
        const catalogue = JSON.parse(spawnSync("python3", [METRICS_MODULE, "catalogue"], { encoding: "utf8" }).stdout) as Record<string, { labels: string[] | null }>;
        const read = alertRules(CTX).flatMap((r) => [...r.expr.matchAll(/\b(nodefleet_[a-z_]+)(\{([^}]*)\})?/g)].map((m) => ({ alert: r.alert, metric: m[1]!, labels: [...(m[3] ?? "").matchAll(/([a-z_]+)\s*(=~|!=|=)/g)].map((l) => l[1]!) })));
        assert.ok(read.length >= FAULTS.length + 3, `${read.length} metrics read`);
        for (const { alert, metric, labels } of read) {
            assert.ok(metric in catalogue, `${alert} reads ${metric}, which nodefleet_metrics.py does not write`);
            for (const l of labels) assert.ok((catalogue[metric]!.labels ?? []).includes(l), `${alert}: ${metric} has no label ${l}`);
        }
    });

    it("every alert has a case that fires it and one that keeps it quiet; what the spec calls expected waits an hour or more", () => {
        for (const [r, cases] of ruleCases(CTX)) {
            assert.ok(cases.some((c) => c.firing.length > 0), `${r.alert}: a firing case`);
            assert.ok(cases.some((c) => c.firing.length === 0), `${r.alert}: a quiet case`);
            assert.ok(r.summary.length > 0 && r.remedy.length > 0, r.alert);
        }
        const byCode = (c: string) => alertRules(CTX).find((r) => r.code === c)!;
        for (const c of ["storage-peers-0", "reth-no-peers"]) {
            assert.equal(byCode(c).severity, "warning");
            assert.match(byCode(c).for, /^[0-9]+h$/, `${c} waits hours, not minutes`);
        }
        assert.equal(byCode("key-running-twice").for, "0m", "a key signing twice pages at once");
    });

    it("the config's alert names are the rules' (every code that alerts, then the history and host alerts)", () => {
        assert.deepEqual(alertNames(), alertRules(CTX).map((r) => r.alert));
        assert.deepEqual([...HISTORY_ALERTS], alertRules(CTX).filter((r) => r.code === undefined).map((r) => r.alert));
    });

    it("a history alert that names a fault of the table gives the table's remedy, not words of its own", () => {
        const stalled = alertRules(CTX).find((r) => r.alert === "NodefleetHeightStalled")!;
        assert.ok(stalled.remedy.includes(`storage: ${FAULT_TABLE["height-not-increasing"]!.remedy};`), stalled.remedy);
    });

    it("alertFor puts its `for` on the alerts it names and on no other, in the rule file and its promtool cases", () => {
        const ctx: RuleContext = { ...CTX, alertFor: { NodefleetServiceDown: "30s", NodefleetDiskAlmostFull: "1m" } };
        const before = alertRules(CTX);
        const after = alertRules(ctx);
        assert.deepEqual(after.filter((r, i) => r.for !== before[i]!.for).map((r) => [r.alert, before.find((b) => b.alert === r.alert)!.for, r.for]), [["NodefleetServiceDown", "2m", "30s"], ["NodefleetDiskAlmostFull", "5m", "1m"]]);
        const file = renderRules(ctx);
        assert.match(file, /- alert: NodefleetServiceDown\n\s+expr: [^\n]+\n\s+for: 30s\n/);
        assert.match(file, /- alert: NodefleetDiskAlmostFull\n\s+expr: [^\n]+\n\s+for: 1m\n/);
        assert.match(renderRuleTests(ctx, "nodefleet.rules.yml"), /service-down written for 30s fires/);
    });

    it("the rule file and its promtool tests (golden; the cli tier runs promtool on them)", () => {
        const rules = renderRules(CTX);
        assert.match(rules, /status: nodefleet status --stack prod/);
        golden("monitoring/nodefleet.rules.yml", rules);
        golden("monitoring/nodefleet.rules.test.yml", renderRuleTests(CTX, "nodefleet.rules.yml"));
    });
});

describe("monitoring: the docs", () => {
    it("docs/monitoring.md's alert table lists every alert with its code, severity and for, and no other", () => {
        const docs = fs.readFileSync(path.join(ROOT, "docs", "monitoring.md"), "utf8");
        const rows = [...docs.matchAll(/^\| `(Nodefleet[A-Za-z0-9]+)` \| (?:`([a-z0-9-]+)`|—) \| (error|warning) \| ([0-9]+[mh]) \|/gm)].map((m) => [m[1], m[2] ?? null, m[3], m[4]]);
        assert.deepEqual(rows, alertRules(CTX).map((r) => [r.alert, r.code ?? null, r.severity, r.for]));
    });
});

describe("monitoring: what every host runs (node_exporter's drop-in, the health timer)", () => {
    const plan = () => parseFleet(monitoredFleet(), secretSource(MONITORING_SECRETS)).hosts.find((h) => h.name === "h-validator")!;

    it("the health timer runs every healthIntervalSeconds; its checks are status's health commands, each given healthTimeoutSeconds; node_exporter reports nodefleet's units (golden, systemd-analyze verify)", () => {
        const m = parseFleet(monitoredFleet(), secretSource(MONITORING_SECRETS)).spec.monitoring!;
        assert.equal(m.healthTimeoutSeconds, 24);
        const files = renderAgentFiles(plan(), { ...m, healthIntervalSeconds: 45 });
        assert.match(files.timer, /^OnUnitActiveSec=45s$/m);
        assert.equal(JSON.parse(files.checks).timeout, 24);
        assert.match(files.service, /^TimeoutStartSec=54$/m);
        // A slower host's: each command's time, and the run's with 30 s to write the metrics.
        const slow = renderAgentFiles(plan(), { ...m, healthTimeoutSeconds: 60 });
        assert.equal(JSON.parse(slow.checks).timeout, 60);
        assert.match(slow.service, /^TimeoutStartSec=90$/m);
        assert.deepEqual(JSON.parse(files.checks).checks.map((c: { argv: string[] }) => c.argv), plan().nodes.map((n) => [...checkArgv(n)]));
        assert.match(files.dropIn, /^ExecStart=\/usr\/bin\/prometheus-node-exporter --web\.listen-address=0\.0\.0\.0:9100 --collector\.systemd "--collector\.systemd\.unit-include=\(zgs\|aztec\|0gchaind\|geth\|reth\|nodefleet\)-\.\+\[\.\]\(service\|timer\)" --collector\.textfile\.directory=\/var\/lib\/prometheus\/node-exporter$/m);
        golden("monitoring/node-exporter.conf", files.dropIn);
        golden("monitoring/nodefleet-health.service", files.service);
        golden("monitoring/nodefleet-health.timer", files.timer);
        golden("monitoring/health-checks.json", files.checks);
        // The drop-in's [Service] checked as a unit's (a drop-in alone is not a unit to verify).
        verifyUnits({ "nodefleet-health.service": files.service, "nodefleet-health.timer": files.timer, "node-exporter-dropin.service": `[Unit]\nDescription=drop-in check\n${files.dropIn}` }, /prometheus-node-exporter|python3/);
    });
});

describe("monitoring: the monitoring host's files", () => {
    const spec = () => parseFleet(monitoredFleet(), secretSource(MONITORING_SECRETS)).spec.monitoring!;
    const HOSTS = [{ host: "h-validator", address: "192.0.2.12", validators: [{ node: "validator-2", role: "validator", consensusPort: 57660, executionPort: 57661 }, { node: "validator-1", role: "validator", consensusPort: 56660, executionPort: 56661 }] }, { host: "h-storage", address: "192.0.2.10", validators: [] }, { host: "h-sequencer", address: "192.0.2.11", validators: [] }];

    it("prometheus.yml: the rule file beside it, a job per exporter kind with its targets from their file, Alertmanager on loopback", () => {
        const text = renderPrometheusConfig(spec(), "prod");
        assert.match(text, /rule_files:\n {2}- nodefleet\.rules\.yml\n/);
        assert.match(text, /file_sd_configs:\n {6}- files:\n {10}- targets\/node\.json\n/);
        const jobs = [...text.matchAll(/- job_name: (\w+)/g)].map((m) => m[1]);
        assert.deepEqual(jobs, ["node", "cometbft", "execution", "prometheus"]);
        assert.match(text, /job_name: execution\n {4}metrics_path: \/debug\/metrics\/prometheus\n {4}file_sd_configs:\n {6}- files:\n {10}- targets\/execution\.json\n/);
        assert.match(text, /- 127\.0\.0\.1:9093/);
        golden("monitoring/prometheus.yml", text);
        // Scraped and evaluated every scrapeIntervalSeconds (30 s unless set).
        assert.match(text, /scrape_interval: 30s\n {2}scrape_timeout: 10s\n {2}evaluation_interval: 30s\n/);
        const quick = renderPrometheusConfig({ ...spec(), scrapeIntervalSeconds: 10 }, "prod");
        assert.match(quick, /scrape_interval: 10s\n {2}scrape_timeout: 10s\n {2}evaluation_interval: 10s\n/);
    });

    it("the node targets: node_exporter on each host, labelled with its name, in name order", () => {
        const text = renderNodeTargets(spec(), HOSTS);
        assert.deepEqual(JSON.parse(text), [
            { targets: ["192.0.2.11:9100"], labels: { host: "h-sequencer" } },
            { targets: ["192.0.2.10:9100"], labels: { host: "h-storage" } },
            { targets: ["192.0.2.12:9100"], labels: { host: "h-validator" } },
        ]);
        golden("monitoring/targets-node.json", text);
    });

    it("the validators' targets: CometBFT's and the execution client's metrics port of each, labelled with host, node and role; none on a fleet without validators", () => {
        const labels = (node: string) => ({ host: "h-validator", node, role: "validator" });
        const comet = renderValidatorTargets("cometbft", HOSTS);
        golden("monitoring/targets-cometbft.json", comet);
        assert.deepEqual(JSON.parse(comet), [
            { targets: ["192.0.2.12:56660"], labels: labels("validator-1") },
            { targets: ["192.0.2.12:57660"], labels: labels("validator-2") },
        ]);
        assert.deepEqual(JSON.parse(renderValidatorTargets("execution", HOSTS)).map((g: { targets: string[] }) => g.targets[0]), ["192.0.2.12:56661", "192.0.2.12:57661"]);
        assert.equal(renderValidatorTargets("execution", HOSTS.filter((h) => h.validators.length === 0)), "[]\n");
        const plan = parseFleet(monitoredFleet(), secretSource(MONITORING_SECRETS));
        const validatorHost = plan.hosts.find((h) => h.nodes.some((n) => n.role === "validator"))!;
        assert.deepEqual(scrapedValidators(validatorHost.nodes), [{ node: "validator-1", role: "validator", consensusPort: 56660, executionPort: 56661 }]);
    });

    it("alertmanager.yml: a route per receiver by severity, the secrets double-quoted, host-level alerts silence their host's others", () => {
        const values = Object.fromEntries(Object.entries(MONITORING_SECRETS));
        const text = renderAlertmanagerConfig(spec(), values);
        assert.match(text, /bot_token: "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"/);
        assert.match(text, /auth_password: "pa\\"ss: #word"/);
        assert.match(text, /receiver: ops-slack\n {6}matchers:\n {8}- severity=~"error"\n/);
        golden("monitoring/alertmanager.yml", text);
    });
});
