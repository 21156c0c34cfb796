// Renders the scripts of the common host steps. Pure: plain values in, text out.
import * as crypto from "node:crypto";
import type { HostPlan, ResolvedRelease } from "../config/plan";
import type { Target } from "../roles/contract";
import {
    FIREWALL_DIR,
    PENDING_PATH,
    RULESET_PATH,
    REVERT_UNIT,
    REVERT_AFTER_SECONDS,
    renderNftRuleset,
    renderFirewallUnit,
} from "./firewall";
import { ingressRules, listeningPorts } from "../config/ports";
import { render, shellWord } from "../base/render";
import { nodeDataDir } from "../base/layout";
import { driftRecord } from "./drift";

/** The unprivileged user every node service runs as. */
export const OPERATOR_USER = "nodefleet";
export const BASE_PACKAGES = ["ca-certificates", "curl", "chrony", "nftables", "python3"] as const;

export function renderPreflight(host: string, mode: "enforce" | "warn", mount: string, target: Target): string {
    return render("preflight.sh", {
        host,
        mode,
        mount,
        cores: target.cores,
        memoryGb: target.memoryGb,
        diskGb: target.diskGb,
        ssd: target.ssd,
    });
}

export function renderBootstrap(plan: HostPlan, mount: string): string {
    return render("bootstrap.sh", {
        host: plan.name,
        packages: BASE_PACKAGES,
        operator: OPERATOR_USER,
        mount,
        dataDirs: plan.nodes.map((n) => nodeDataDir(mount, n.name)),
        reservedPorts: listeningPorts(plan.nodes, plan.monitoring).join(","),
        reservedPortsConf: RESERVED_PORTS_CONF,
        reservedPortsUnit: heredocSafe(renderReservedPortsUnit(), "NODEFLEET_UNIT"),
    });
}

/** The sysctl file of the ports a host's services listen on (docs/hosts.md, "Listening ports and the ephemeral range"). */
export const RESERVED_PORTS_CONF = "/etc/sysctl.d/90-nodefleet-reserved-ports.conf";

/** The unit that applies RESERVED_PORTS_CONF at boot where systemd-sysctl.service does not (a container). */
export function renderReservedPortsUnit(): string {
    return render("nodefleet-reserved-ports.service", { conf: RESERVED_PORTS_CONF });
}

/** Where releases are unpacked (one directory per checksum) and linked by name. */
export const RELEASES_DIR = "/opt/nodefleet/releases";
export const releaseLink = (name: string): string => `/opt/nodefleet/${name}`;
/** Where the rollout gates keep each node's first-deploy marker and, to roll back to, its files (components/rollout/gate.ts). */
export const GATE_DIR = "/var/lib/nodefleet/gate";

/**
 * Where a release is unpacked: its name and a digest prefix. 24 hex digits since nodefleet stopped
 * removing a release when its install step is replaced: steps of earlier versions (16 digits) still
 * hold that removal in their state, and run it once on the upgrade, on a directory no longer used.
 */
export function releaseDir(r: Pick<ResolvedRelease, "name" | "sha256">): string {
    return `${RELEASES_DIR}/${r.name}-${r.sha256.slice(0, 24)}`;
}

export interface ReleaseScripts {
    readonly install: string;
    readonly remove: string;
    /** The drift group of the release's files (the install step records and repairs them). */
    readonly driftGroup: string;
    /** The secret config key holding the URL, when it is one: the install step sets nodefleet_secret_url from it. */
    readonly secretUrlKey?: string;
}

/**
 * A release's install and removal. The install of a release whose URL is a secret reads it from
 * `nodefleet_secret_url` (its step's secrets, ReleaseScripts.secretUrlKey): the script holds no URL.
 */
export function renderRelease(host: string, r: ResolvedRelease): ReleaseScripts {
    const driftGroup = `release.${r.name}`;
    const secretUrlKey = typeof r.url === "string" ? undefined : r.url.secret;
    const vars = {
        host,
        name: r.name,
        url: typeof r.url === "string" ? r.url : "",
        secretUrl: secretUrlKey !== undefined,
        sha256: r.sha256,
        releasesDir: RELEASES_DIR,
        dest: releaseDir(r),
        link: releaseLink(r.name),
        driftRecord: driftRecord(driftGroup),
        gateDir: GATE_DIR,
    };
    return {
        install: render("install-release.sh", vars),
        remove: render("remove-release.sh", vars),
        driftGroup,
        ...(secretUrlKey === undefined ? {} : { secretUrlKey }),
    };
}

/** The firewall's drift group: its confirm step records the table and, run again, loads it again. */
export const FIREWALL_DRIFT_GROUP = "firewall";

export function renderDataVolume(host: string, device: string, mount: string): string {
    return render("data-volume.sh", { host, device, mount });
}

/** Content for a quoted heredoc ending in `delimiter`: refused if a line equals it; ends in a newline. */
export function heredocSafe(text: string, delimiter: string): string {
    if (text.split("\n").includes(delimiter)) throw new Error(`content holds the heredoc delimiter ${delimiter}`);
    return text.endsWith("\n") ? text : `${text}\n`;
}

export interface FirewallScripts {
    readonly ruleset: string;
    readonly apply: string;
    readonly confirm: string;
    readonly remove: string;
}

export function renderFirewallScripts(plan: HostPlan): FirewallScripts {
    const ruleset = heredocSafe(renderNftRuleset(plan.name, ingressRules(plan.spec, plan.nodes, plan.monitoring)), "NODEFLEET_RULESET");
    const sha256 = crypto.createHash("sha256").update(ruleset).digest("hex");
    const common = { host: plan.name, dir: FIREWALL_DIR, pending: PENDING_PATH, revertUnit: REVERT_UNIT };
    return {
        ruleset,
        apply: render("firewall-apply.sh", {
            ...common,
            revertAfter: REVERT_AFTER_SECONDS,
            ruleset,
            unit: heredocSafe(renderFirewallUnit(), "NODEFLEET_UNIT"),
        }),
        confirm: render("firewall-confirm.sh", {
            ...common,
            ruleset: RULESET_PATH,
            sha256,
            driftRecord: driftRecord(FIREWALL_DRIFT_GROUP),
        }),
        remove: render("firewall-remove.sh", { ...common, driftRecord: driftRecord(FIREWALL_DRIFT_GROUP) }),
    };
}

/**
 * A script whose secrets stay out of its text: `body` refers to each secret as the shell variable
 * nodefleet_secret_NAME, and goes into the host's bundle like any script; the step's stdin (itself
 * a secret) sets the variables and runs the body in the same shell (HostBundle.run with secrets).
 * Each secret is a file's whole content, ending in a newline: the variable holds it without its
 * last newline, and a here-document line `$nodefleet_secret_NAME` gives it back byte for byte (the
 * shell expands a parameter there once; what it expands to is not expanded again).
 */
export interface SecretScript {
    readonly body: string;
    readonly secrets: Readonly<Record<string, string>>;
}

/** The shell assignments of a script's secrets, one line each (a value may span lines, quoted). */
export function secretAssignments(secrets: SecretScript["secrets"]): string {
    return Object.entries(secrets)
        .map(([name, content]) => {
            if (!/^[a-z][a-z_]*$/.test(name)) throw new Error(`unreachable: secret name ${JSON.stringify(name)}`);
            if (!content.endsWith("\n")) throw new Error(`unreachable: the secret ${name} is a file's content and ends in a newline`);
            return `nodefleet_secret_${name}=${shellWord(content.slice(0, -1))}\n`;
        })
        .join("");
}

/**
 * The script as its host runs it, whole: the body with the assignments after its first line (the
 * `#!/bin/sh`). What the renderers' goldens keep and the tests run; on a host the assignments come
 * on stdin and the body from the bundle.
 */
export function wholeScript(s: SecretScript): string {
    const newline = s.body.indexOf("\n");
    return `${s.body.slice(0, newline + 1)}${secretAssignments(s.secrets)}${s.body.slice(newline + 1)}`;
}
