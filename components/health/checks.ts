// Each node's read-only health command, as an argv (no shell on the host): what `nodefleet status`
// runs over SSH and the host's health timer runs every interval; the answer goes through the one
// diagnosis table (hostfiles/nodefleet_health.py) either way.
import * as path from "node:path";
import type { NodeSpec } from "../config/schema";
import { HOST_LIB } from "../hosts/scripts";
import { render } from "../base/render";
import { sequencerPaths, storagePaths, validatorPaths } from "./paths";

export function checkArgv(node: NodeSpec): readonly string[] {
    switch (node.role) {
        case "storage":
            return ["python3", `${HOST_LIB}/zgs-health.py`, node.name];
        case "sequencer":
            return ["python3", `${HOST_LIB}/aztec-health.py`, node.name];
        case "validator":
            return ["python3", "-S", `${HOST_LIB}/zg-validator.py`, path.posix.join(validatorPaths(node, "/").etcDir, "validator.json"), "status"];
    }
}

/**
 * The node's long-running services, as its roles name their units: what a rollout's gate watches
 * for a crash loop (hostfiles/nodefleet_gate.py --unit). A validator's are both execution clients
 * (only the one it runs is started) and its consensus daemon.
 */
export function serviceUnits(node: NodeSpec): readonly string[] {
    switch (node.role) {
        case "storage":
            return [storagePaths(node, "/").service];
        case "sequencer":
            return [sequencerPaths(node, "/").service];
        case "validator": {
            const p = validatorPaths(node, "/");
            return [p.gethService, p.rethService, p.consensusService];
        }
    }
}

/**
 * A node's health step (after its configure step, or a validator's switch steps): its health
 * tool's report (`health`, an argv), then a failure when one of `units` does not run, with their journal lines;
 * unless `gate` (the node's gate marker, when the node is gated) exists on the host: its gate judges
 * it. The configure step only warns for a node that does not run after its restart: a step that
 * fails records nothing in Pulumi's state, so a set-back would not run it again.
 */
export function renderHealthStep(node: NodeSpec, health: readonly string[], units: readonly string[], gate?: string): string {
    return render("health-step.sh", { role: node.role, node: node.name, health, units, gate: gate ?? "" });
}
