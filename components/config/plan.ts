// What the config resolves to for each host and release: the types the config's checks and every
// layer above share (parseFleet makes them, components/config/fleet.ts).
import type { HostSpec, NodeSpec } from "./schema";
import type { ReleaseUrl } from "../values/primitives";
import type { HostMonitoring } from "./monitoring";

/** A release with its checksum resolved: what a host installs. */
export interface ResolvedRelease {
    readonly name: string;
    /** The URL, or the secret config key that holds it (its value goes to the host as a secret). */
    readonly url: ReleaseUrl;
    readonly sha256: string;
}

export interface HostPlan {
    readonly name: string;
    readonly spec: HostSpec;
    readonly nodes: readonly NodeSpec[];
    /** The releases its nodes name, each once, in name order. */
    readonly releases: readonly ResolvedRelease[];
    /** What it is to the monitoring stack, when the fleet has one. */
    readonly monitoring?: HostMonitoring;
    /** Its nodes are gated (the fleet has a `rollout` section): the gate's tools go into its bundle. */
    readonly gated?: true;
}
