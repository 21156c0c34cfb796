// The 0G chain validator role: rendering of its execution-client units (seed 2.6) and paths.
// The steps that install and switch them (seed 4.5) build on these; they are not wired into the
// fleet yet (see README: Roles).
import type { NodeSpec } from "../config/schema";
import { prefixed, VALIDATOR_SUFFIXES } from "../ports";
import { nodeDataDir, OPERATOR_USER, releaseLink } from "../hosts/scripts";
import { render } from "../render";

type ValidatorSpec = Extract<NodeSpec, { role: "validator" }>;

/** The dev and Galileo testnet chain id the 0G release's geth genesis carries. */
export const ZG_CHAIN_ID = 16661;

export interface ValidatorPaths {
    /** The node data root: the units' working directory. */
    readonly dataRoot: string;
    readonly gethDir: string;
    readonly rethDir: string;
    readonly consensusHome: string;
    /** The one JWT secret file both the execution client and 0gchaind read (seed 5). */
    readonly jwt: string;
    readonly gethService: string;
    readonly rethService: string;
    readonly consensusService: string;
}

export function validatorPaths(node: ValidatorSpec, mount: string): ValidatorPaths {
    const dataRoot = nodeDataDir(mount, node.name);
    return {
        dataRoot,
        gethDir: `${dataRoot}/geth`,
        rethDir: `${dataRoot}/reth`,
        consensusHome: `${dataRoot}/0gchaind`,
        jwt: `${dataRoot}/jwt.hex`,
        gethService: `geth-${node.name}.service`,
        rethService: `reth-${node.name}.service`,
        consensusService: `0gchaind-${node.name}.service`,
    };
}

/** <prefix><suffix> ports of the execution client. */
export function executionPorts(node: ValidatorSpec) {
    const at = (s: number) => prefixed(node.validator.portPrefix, s);
    return { http: at(VALIDATOR_SUFFIXES.elHttp), ws: at(VALIDATOR_SUFFIXES.elWs), engine: at(VALIDATOR_SUFFIXES.engine), p2p: at(VALIDATOR_SUFFIXES.elP2p) };
}

function unitContext(node: ValidatorSpec, mount: string, release: string, publicIp: string) {
    const p = validatorPaths(node, mount);
    return { node: node.name, operator: OPERATOR_USER, dataRoot: p.dataRoot, jwt: p.jwt, ports: executionPorts(node), bootnode: node.validator.bootnode, publicIp, bin: `${releaseLink(release)}/bin` };
}

/** reth's unit with exactly the parameters and unit settings of seed 2.6. */
export function renderRethUnit(node: ValidatorSpec, mount: string, release: string, publicIp: string): string {
    const c = unitContext(node, mount, release, publicIp);
    const p = validatorPaths(node, mount);
    return render("reth.service", { ...c, binary: `${c.bin}/reth`, genesis: `${releaseLink(release)}/geth-genesis.json`, datadir: p.rethDir, ipcpath: `${p.rethDir}/reth.ipc` });
}

/** geth's unit: the pre-migration state and the rollback target, on the same ports and JWT file. */
export function renderGethUnit(node: ValidatorSpec, mount: string, release: string, publicIp: string): string {
    const c = unitContext(node, mount, release, publicIp);
    return render("geth.service", { ...c, binary: `${c.bin}/geth`, datadir: validatorPaths(node, mount).gethDir, networkId: ZG_CHAIN_ID });
}
