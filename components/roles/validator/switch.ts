// The geth -> reth switch of a validator (docs/switch.md): its steps as the config asks for them
// (migrate, rollback, cleanup), each a command of the validator's host tool, bound to the inputs it
// acted on and triggered by the attempt.
import type * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import type { NodeSpec } from "../../config/schema";
import { remoteStep, stepReport } from "../../hosts/host";
import { HOST_LIB as LIB } from "../../base/layout";
import { contentHash } from "../../base/render";
import type { Prelude } from "../prelude";
import { validatorPaths } from "./contract";
import { LOW_DOWNTIME_STEPS, SWITCH_STEPS } from "./switch-steps";
import { executionPorts, type ValidatorRelease } from "./units";

type ValidatorSpec = Extract<NodeSpec, { role: "validator" }>;

/** One command of the host tool: `zg-validator.py <settings> <args...>`. */
export function toolCommand(node: ValidatorSpec, ...args: string[]): string {
    return `exec python3 -S ${LIB}/zg-validator.py ${validatorPaths(node, "/").etcDir}/validator.json ${args.join(" ")}\n`;
}

/**
 * What a completed switch step is bound to: the paths, ports, release and genesis it acted on.
 * A marker on the host written with another hash is refused (finish with the same settings or
 * roll back). Tunables (tolerance, retries, reference URL) are not in it.
 */
export function switchInputsHash(node: ValidatorSpec, mount: string, release: ValidatorRelease): string {
    const p = validatorPaths(node, mount);
    return contentHash(JSON.stringify({ p, ports: executionPorts(node), release: release.name }));
}

/** The switch steps' trigger: the attempt they belong to (config `switchAttempt`). */
export function switchTrigger(node: ValidatorSpec): string {
    return `attempt ${node.validator.switchAttempt}`;
}

/**
 * The switch's steps the config asks for, after `after`: migrate (s01 .. s14, or l01 .. l14 with
 * lowDowntime), rollback or cleanup; none without a switch. Returns the last step and the switch's
 * report. Pulumi's state holds the switch's progress: a step that completed is recorded and not
 * run again (it previews as unchanged); a step that fails records nothing, so the next `up` resumes
 * there. Each step's trigger is the attempt: a mode already recorded for this attempt (a rollback
 * a failed migrate never deleted, say) runs again only in a new one. The host's markers stay the
 * second guard (a step done on the host is skipped there).
 */
export function switchSteps(
    parent: pulumi.Resource,
    name: string,
    a: {
        readonly node: ValidatorSpec;
        readonly base: Prelude["base"];
        readonly mount: string;
        readonly release: ValidatorRelease;
        readonly after: pulumi.Resource;
    },
): { readonly last: pulumi.Resource; readonly report?: pulumi.Output<Record<string, unknown>> } {
    const { node, base } = a;
    const sw = node.validator.switch;
    const attempt = switchTrigger(node);
    if (sw === "migrate") {
        const inputs = switchInputsHash(node, a.mount, a.release);
        const steps = node.validator.lowDowntime ? LOW_DOWNTIME_STEPS : SWITCH_STEPS;
        let last: pulumi.Resource = a.after;
        let cmd: command.remote.Command | undefined;
        for (const step of steps) {
            cmd = remoteStep(
                `${name}-switch-${step}`,
                { ...base, script: toolCommand(node, "migrate", step, inputs), inputsHash: [attempt] },
                { parent, dependsOn: [last] },
            );
            last = cmd;
        }
        return { last, report: cmd && stepReport(cmd, "switch report") };
    }
    if (sw === "rollback" || sw === "cleanup") {
        const what = sw === "cleanup" ? [attempt, JSON.stringify(node.validator.cleanup)] : [attempt];
        const cmd = remoteStep(
            `${name}-switch-${sw}`,
            { ...base, script: toolCommand(node, sw), inputsHash: what },
            { parent, dependsOn: [a.after] },
        );
        return { last: cmd, report: stepReport(cmd, `${sw} report`) };
    }
    return { last: a.after };
}
