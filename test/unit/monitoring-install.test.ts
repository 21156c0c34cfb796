// The monitoring stack's steps on the hosts: the scripts (goldens, shellcheck, systemd-analyze on the
// drop-ins), with strict mocks the steps each host gets and their order, where the receivers'
// secrets go, and the firewall rule for node_exporter. What this cannot prove: that the packages
// install and run with these files on a real host, that promtool and amtool on the host accept
// them (the cli tier runs both on the same files), and that alerts reach a receiver (e2e).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseFleet } from "../../components/config/fleet";
import { FleetConfigError } from "../../components/config/errors";
import { renderAgentScripts, renderServerDropIns, renderServerInstall, renderServerRemove, renderTargetsScript } from "../../components/monitoring/install";
import { renderFirewallScripts, wholeScript } from "../../components/hosts/scripts";
import { ingressRules } from "../../components/config/ports";
import { golden, requireTool, runTool, verifyUnits } from "../support/golden";
import { hetznerHost, secretSource } from "../support/fixtures";
import { inputsOf, registered, scriptOf, deleteScriptOf } from "../support/mocks";
import { buildStack } from "../support/stack";
import { MONITORING_SECRETS, monitoredFleet } from "../support/monitoring";

const CTX = { stack: "prod", healthIntervalSeconds: 30, mounts: ["/", "/data"] };
const plan = () => parseFleet(monitoredFleet(), secretSource(MONITORING_SECRETS));

function issues(f: unknown): string[] {
    try {
        parseFleet(f, secretSource(MONITORING_SECRETS));
    } catch (e) {
        if (e instanceof FleetConfigError) return [...e.issues];
        throw e;
    }
    return [];
}

describe("monitoring: the install scripts", () => {
    it("agent, server, targets and their removals match golden copies and pass shellcheck; the server's secrets stay out of its body", () => {
        requireTool("shellcheck", "shellcheck");
        const p = plan();
        const m = p.spec.monitoring!;
        const agent = renderAgentScripts(p.hosts.find((h) => h.name === "h-validator")!, m);
        const server = renderServerInstall("h-storage", m, CTX, MONITORING_SECRETS);
        for (const secret of [MONITORING_SECRETS.hookUrl, MONITORING_SECRETS.tgToken, MONITORING_SECRETS.slackUrl]) assert.ok(!server.body.includes(secret), "a receiver's secret in the bundled body");
        assert.match(server.secrets.alertmanager, /bot_token: "123456789:/);
        const files = [
            golden("monitoring/agent.sh", agent.install),
            golden("monitoring/agent-remove.sh", agent.remove),
            golden("monitoring/server.sh", wholeScript(server)),
            golden("monitoring/server-remove.sh", renderServerRemove("h-storage")),
            golden("monitoring/targets.sh", renderTargetsScript("h-storage", m, [{ host: "h-storage", address: "192.0.2.10", validators: [] }, { host: "h-validator", address: "192.0.2.12", validators: [{ node: "validator-1", role: "validator", consensusPort: 56660, executionPort: 56661 }] }])),
        ];
        for (const f of files) {
            const r = runTool("shellcheck", ["--shell=sh", "--severity=style", f]);
            assert.equal(r.status, 0, `${path.basename(f)}:\n${r.output}`);
        }
    });

    it("the server's drop-ins: the config under /etc/prometheus/nodefleet, loopback, retention, and no Alertmanager cluster port", () => {
        const m = plan().spec.monitoring!;
        const d = renderServerDropIns("h-storage", m);
        assert.match(d.prometheus, /^ExecStart=\/usr\/bin\/prometheus --config\.file=\/etc\/prometheus\/nodefleet\/prometheus\.yml --web\.listen-address=127\.0\.0\.1:9090 --storage\.tsdb\.path=\/var\/lib\/prometheus\/metrics2\/ --storage\.tsdb\.retention\.time=15d$/m);
        assert.match(d.alertmanager, /--web\.listen-address=127\.0\.0\.1:9093 .*--cluster\.listen-address=$/m);
        golden("monitoring/prometheus.conf", d.prometheus);
        golden("monitoring/alertmanager.conf", d.alertmanager);
        verifyUnits({ "prometheus-dropin.service": `[Unit]\nDescription=drop-in check\n${d.prometheus}`, "alertmanager-dropin.service": `[Unit]\nDescription=drop-in check\n${d.alertmanager}` }, /prometheus/);
    });
});

describe("monitoring: the hosts' firewalls", () => {
    it("node_exporter's port, and a validator's metrics ports on its host, are open to the monitoring host's address alone; nothing else changes", () => {
        const p = plan();
        const metrics = new Set([9100, 56660, 56661]);
        for (const h of p.hosts) {
            const rules = ingressRules(h.spec, h.nodes, h.monitoring).filter((r) => metrics.has(r.port));
            const validator = h.nodes.some((n) => n.role === "validator");
            assert.deepEqual(rules.map((r) => [r.port, r.protocol, r.sources]), [[9100, "tcp", ["192.0.2.10/32"]], ...(validator ? [[56660, "tcp", ["192.0.2.10/32"]], [56661, "tcp", ["192.0.2.10/32"]]] : [])], h.name);
            assert.deepEqual(ingressRules(h.spec, h.nodes, h.monitoring).filter((r) => !metrics.has(r.port)), ingressRules(h.spec, h.nodes), h.name);
            assert.match(renderFirewallScripts(h).ruleset, /ip saddr \{ 192\.0\.2\.10\/32 \} tcp dport 9100 accept comment "node_exporter, for the monitoring host"/);
            if (validator) assert.match(renderFirewallScripts(h).ruleset, /ip saddr \{ 192\.0\.2\.10\/32 \} tcp dport 56661 accept comment "validator-1 execution client metrics, for the monitoring host"/);
        }
        assert.ok(p.hosts.some((h) => h.nodes.some((n) => n.role === "validator")), "the fixture has a validator");
    });

    it("the web ports open only to webAllowedCidrs, and only on the monitoring host, when it listens beyond loopback", () => {
        const f = monitoredFleet();
        Object.assign(f.monitoring, { listenAddress: "0.0.0.0", webAllowedCidrs: ["198.51.100.0/24"] });
        const p = parseFleet(f, secretSource(MONITORING_SECRETS));
        const web = (name: string) => {
            const h = p.hosts.find((x) => x.name === name)!;
            return ingressRules(h.spec, h.nodes, h.monitoring).filter((r) => r.port === 9090 || r.port === 9093).map((r) => [r.port, r.sources]);
        };
        assert.deepEqual(web("h-storage"), [[9090, ["198.51.100.0/24"]], [9093, ["198.51.100.0/24"]]]);
        assert.deepEqual(web("h-validator"), []);
    });

    it("a cloud monitoring host needs a fixed address in monitoring.addresses (its firewall source for every host)", () => {
        const f = monitoredFleet();
        f.hosts["h-mon"] = hetznerHost();
        f.monitoring.host = "h-mon";
        const found = issues(f).filter((i) => i.startsWith("monitoring."));
        assert.equal(found.length, 1, found.join("\n"));
        assert.match(found[0]!, /^monitoring\.addresses\.h-mon: required: the monitoring host is a hetzner host/);
        f.monitoring.addresses = { "h-mon": "203.0.113.40" };
        assert.deepEqual(issues(f).filter((i) => i.startsWith("monitoring.")), []);
    });
});

describe("monitoring: the steps", () => {
    it("every host: its agent after its firewall; the monitoring host: Prometheus and Alertmanager after its agent, then the targets", async () => {
        const { recorded } = await buildStack(monitoredFleet(), MONITORING_SECRETS);
        const dep = (n: string) => recorded.find((r) => r.name === n && r.custom)?.dependsOn;
        for (const host of ["h-storage", "h-sequencer", "h-validator"]) {
            assert.deepEqual(dep(`fleet-${host}-monitoring-agent-teardown`), [`fleet-${host}-firewall-confirm`], host);
            assert.deepEqual(dep(`fleet-${host}-monitoring-agent`), [`fleet-${host}-monitoring-agent-teardown`], host);
            assert.match(scriptOf(`fleet-${host}-monitoring-agent`), /apt-get install -y -qq --no-install-recommends prometheus-node-exporter/);
            assert.match(deleteScriptOf(`fleet-${host}-monitoring-agent-teardown`), /systemctl disable --now nodefleet-health\.timer/);
        }
        assert.deepEqual(dep("fleet-h-storage-monitoring-teardown"), ["fleet-h-storage-monitoring-agent"]);
        assert.deepEqual(dep("fleet-h-storage-monitoring"), ["fleet-h-storage-monitoring-teardown"]);
        assert.deepEqual(dep("fleet-h-storage-monitoring-targets"), ["fleet-h-storage-monitoring"]);
        assert.equal(recorded.filter((r) => r.custom && /-monitoring(-teardown|-targets)?$/.test(r.name)).length, 3, "one monitoring host");
        const targets = JSON.parse(/<<'NODEFLEET_EOF'\n([\s\S]*?)NODEFLEET_EOF/.exec(scriptOf("fleet-h-storage-monitoring-targets"))![1]!);
        assert.deepEqual(targets.map((t: any) => [t.labels.host, t.targets[0]]), [["h-sequencer", "192.0.2.11:9100"], ["h-storage", "192.0.2.10:9100"], ["h-validator", "192.0.2.12:9100"]]);
        assert.match(deleteScriptOf("fleet-h-storage-monitoring-teardown"), /data is kept under \/var\/lib\/prometheus/);
    });

    it("the receivers' secrets reach only the server step's secret stdin: not its bundled body, no other input, no bundle", async () => {
        await buildStack(monitoredFleet(), MONITORING_SECRETS);
        const secrets = [MONITORING_SECRETS.hookUrl, MONITORING_SECRETS.slackUrl, MONITORING_SECRETS.tgToken, MONITORING_SECRETS.discordUrl];
        const server = registered.find((r) => r.name === "fleet-h-storage-monitoring" && r.custom)!;
        assert.ok(server.secretPaths.includes("stdin"), "the server's stdin is a secret");
        for (const s of secrets) assert.ok(String(server.inputs.stdin).includes(s));
        for (const r of registered.filter((x) => x.custom && x.name !== "fleet-h-storage-monitoring")) {
            for (const s of secrets) assert.ok(!JSON.stringify(r.inputs).includes(s), `${r.name} carries a receiver's secret`);
        }
        for (const copy of registered.filter((r) => r.type === "command:remote:CopyToRemote")) {
            for (const f of fs.readdirSync(copy.archivePath!)) {
                const text = fs.readFileSync(path.join(copy.archivePath!, f), "utf8");
                for (const s of secrets) assert.ok(!text.includes(s), `bundled ${f} holds a receiver's secret`);
            }
        }
        assert.match(scriptOf("fleet-h-storage-monitoring"), /amtool check-config "\$stage\/alertmanager\.yml"/);
    });

    it("without a monitoring section: no monitoring step, and the bundles carry no health module", async () => {
        const f = monitoredFleet();
        delete f.monitoring;
        await buildStack(f, MONITORING_SECRETS);
        assert.deepEqual(registered.filter((r) => r.name.includes("monitoring")).map((r) => r.name), []);
        assert.throws(() => inputsOf("fleet-h-storage-monitoring-agent"), /no registered resource/);
        for (const h of ["h-storage", "h-sequencer"]) {
            assert.doesNotMatch(JSON.stringify(registered.find((r) => r.name === `fleet-${h}-firewall-apply`)!.inputs), /9100/);
        }
    });
});
