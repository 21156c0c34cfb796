// A validator moving host: one key must never sign on two machines, so a validator whose host
// changed since the last `up` is handed over on the host it leaves (validatorHandover: its daemons
// stopped and disabled, its key set aside, its signing state read) before its key is written on
// the new one. The host it leaves may be built after the one it moves to: the handover is a
// promise until then.
import * as pulumi from "@pulumi/pulumi";
import type { FleetPlan } from "../../config/fleet";
import type { NodeSpec } from "../../config/schema";
import { deferred, type Deferred } from "../../base/deferred";
import { type Host, remoteStep, stepReport } from "../../hosts/host";
import { toolCommand } from "./switch";

type ValidatorSpec = Extract<NodeSpec, { role: "validator" }>;

/** A validator's handover on the host it leaves (see `validatorHandover`). */
export interface Handover {
    readonly step: pulumi.Resource | Promise<pulumi.Resource>;
    /** The signing state (priv_validator_state.json) the old host reported, carried on by setup here. */
    readonly signingState: pulumi.Output<unknown>;
}

export class ValidatorMoves {
    private readonly moves = new Map<string, { readonly from: string; readonly handover: Deferred<Handover> }>();

    /** `previous`: per validator, the host it ran on after the last `up` (the stack output `validatorHosts`). */
    constructor(plan: FleetPlan, previous: Readonly<Record<string, string>>) {
        for (const [node, from] of plannedMoves(plan, previous)) this.moves.set(node, { from, handover: deferred<Handover>() });
    }

    /**
     * Host `host` is built: the handover there of each validator leaving it, a step named
     * `<prefix>-<node>-handover` under `parent`, run as `user`.
     */
    leaving(
        host: Host,
        nodes: readonly NodeSpec[],
        a: { readonly prefix: string; readonly user: string; readonly parent: pulumi.Resource },
    ): void {
        for (const [name, move] of this.moves) {
            if (move.from !== host.hostName) continue;
            const node = nodes.find((n) => n.name === name);
            if (node?.role !== "validator") continue;
            move.handover.resolve(validatorHandover(`${a.prefix}-${node.name}`, node, host, a.user, { parent: a.parent }));
        }
    }

    /** The handover a validator moving here waits for, or undefined when it does not move. */
    arriving(node: string): Handover | undefined {
        const move = this.moves.get(node);
        if (move === undefined) return undefined;
        const done = move.handover.promise;
        return { step: done.then((h) => h.step as pulumi.Resource), signingState: pulumi.output(done).apply((h) => h.signingState) };
    }
}

/**
 * One validator key must never sign on two machines: a validator whose host changed since the
 * last `up` is handed over on the host it leaves first (ValidatorMoves). A host that is no
 * longer configured cannot be reached: refused unless the operator names it in
 * `validator.abandonHost`. Returns node -> the host it leaves.
 */
function plannedMoves(plan: FleetPlan, previous: Readonly<Record<string, string>>): Map<string, string> {
    const moves = new Map<string, string>();
    const configured = new Set(plan.hosts.map((h) => h.name));
    for (const host of plan.hosts) {
        for (const node of host.nodes) {
            if (node.role !== "validator") continue;
            const from = previous[node.name];
            const abandon = node.validator.abandonHost;
            if (abandon !== undefined && from !== undefined && from !== node.host && abandon !== from) {
                throw new pulumi.RunError(
                    `${node.name}: validator.abandonHost names host ${abandon}, but the validator last ran on ${from} (the stack output validatorHosts): the only host it can abandon is ${from}`,
                );
            }
            if (from === undefined || from === node.host) {
                if (abandon !== undefined)
                    pulumi.log.warn(
                        `${node.name}: validator.abandonHost: ${abandon} has nothing to do: the validator ${from === undefined ? "has no recorded host yet" : `already runs on ${from}`}; remove it`,
                    );
                continue;
            }
            if (node.validator.abandonHost === from) {
                pulumi.log.warn(
                    `${node.name}: moves from host ${from} to ${node.host} with validator.abandonHost: ${from}: nothing is stopped on ${from}; no 0gchaind may run there with this key`,
                );
                continue;
            }
            if (!configured.has(from)) {
                throw new pulumi.RunError(
                    `${node.name}: the validator ran on host ${from}, which is no longer in the config, so nodefleet cannot stop its 0gchaind there before starting it on ${node.host} (one key must never sign on two machines). Make sure it is stopped for good and its key removed there, then set validator.abandonHost: ${from}`,
                );
            }
            pulumi.log.warn(
                `${node.name}: moves from host ${from} to ${node.host}: the handover on ${from} stops and disables its 0gchaind and sets its key aside first; if ${from} cannot be reached this up stops there, before anything starts on ${node.host} (if ${from} is gone for good: validator.abandonHost: ${from})`,
            );
            moves.set(node.name, from);
        }
    }
    return moves;
}

/**
 * The handover of a validator moving off host `from`, run there before anything is written or
 * started with the key on its new host: 0gchaind and the execution client stopped and disabled,
 * the key set aside, the signing state reported (zg-validator.py handover).
 */
function validatorHandover(name: string, node: ValidatorSpec, from: Host, user: string, opts: pulumi.CustomResourceOptions): Handover {
    const step = remoteStep(
        `${name}-handover`,
        { connection: from.connection, user, script: toolCommand(node, "handover"), inputsHash: [`from ${from.hostName} to ${node.host}`] },
        opts,
    );
    return { step, signingState: stepReport(step, "handover report").apply((r) => r.signingState ?? null) };
}
