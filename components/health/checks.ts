// Each node's read-only health command, as an argv (no shell on the host): what `nodefleet status`
// runs over SSH and the host's health timer runs every interval; the answer goes through the one
// diagnosis table (hostfiles/nodefleet_health.py) either way.
import type { NodeSpec } from "../config/schema";
import { render } from "../base/render";
import { contractOf } from "../roles/registry";

/** A node's health command: its role's. */
export function checkArgv(node: NodeSpec): readonly string[] {
    return contractOf(node).health(node);
}

/**
 * The node's long-running services, as its role names their units: what a rollout's gate watches
 * for a crash loop (hostfiles/nodefleet_gate.py --unit).
 */
export function serviceUnits(node: NodeSpec): readonly string[] {
    return contractOf(node).units(node);
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
