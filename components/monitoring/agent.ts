// What every host of a monitored fleet runs for the monitoring host to scrape: Debian's
// prometheus-node-exporter (a drop-in for its unit: listen address, nodefleet's units' states, the
// textfile collector) and nodefleet's health timer, which runs each node's health command and
// writes the rows of the one diagnosis table (hostfiles/nodefleet_health.py) as metrics. Pure.
import type { HostPlan } from "../config/plan";
import type { MonitoringSpec } from "../config/monitoring";
import { HOST_LIB } from "../base/layout";
import { render } from "../base/render";
import { checkArgv } from "../health/checks";

/** Debian's textfile directory for node_exporter (the package's default). */
export const TEXTFILE_DIR = "/var/lib/prometheus/node-exporter";
export const HEALTH_CHECKS_FILE = "/etc/nodefleet/health-checks.json";
export const HEALTH_SERVICE = "nodefleet-health.service";
export const HEALTH_TIMER = "nodefleet-health.timer";
export const NODE_EXPORTER_DROPIN = "/etc/systemd/system/prometheus-node-exporter.service.d/nodefleet.conf";
/** The units whose states node_exporter reports (NodefleetUnitFailed): the nodes', the switch's jobs, nodefleet's own. */
export const NODEFLEET_UNITS = "(zgs|aztec|0gchaind|geth|reth|nodefleet)-.+[.](service|timer)";
export interface AgentFiles {
    readonly dropIn: string;
    readonly service: string;
    readonly timer: string;
    /** The checks the timer runs: {host, timeout, checks: [{node, role, argv}]}. */
    readonly checks: string;
}

export function renderAgentFiles(plan: HostPlan, m: MonitoringSpec): AgentFiles {
    const host = plan.name;
    const checks = {
        host,
        timeout: m.healthTimeoutSeconds,
        checks: plan.nodes.map((n) => ({ node: n.name, role: n.role, argv: checkArgv(n) })),
    };
    return {
        dropIn: render("node-exporter.conf", {
            host,
            listen: `--web.listen-address=0.0.0.0:${m.nodeExporterPort}`,
            unitInclude: `--collector.systemd.unit-include=${NODEFLEET_UNITS}`,
            textfile: `--collector.textfile.directory=${TEXTFILE_DIR}`,
        }),
        service: render("nodefleet-health.service", {
            host,
            module: `${HOST_LIB}/nodefleet_metrics.py`,
            checks: HEALTH_CHECKS_FILE,
            out: `${TEXTFILE_DIR}/nodefleet.prom`,
            timeout: m.healthTimeoutSeconds + 30,
        }),
        timer: render("nodefleet-health.timer", { host, interval: m.healthIntervalSeconds }),
        checks: `${JSON.stringify(checks, null, 2)}\n`,
    };
}
