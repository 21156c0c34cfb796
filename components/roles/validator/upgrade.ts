// An upgrade at an agreed height (docs/rollouts.md, "Upgrades at a height"): what a validator's
// configure step stages for it beside the running release: the new release's units under
// <etcDir>/upgrade/, the watcher's unit, and the settings the host tool reads
// (hostfiles/zgvalidator/upgrade.py, which arms the watcher and swaps the units at the height).
// Pure rendering; the fleet installs the release itself ahead, as any release a host's nodes name.
import type { NodeSpec } from "../../config/schema";
import { releaseDir } from "../../hosts/scripts";
import { HOST_LIB } from "../../base/layout";
import { render } from "../../base/render";
import { validatorPaths } from "./contract";
import { renderConsensusUnit, renderGethUnit, renderRethUnit, unitNames, type ValidatorRelease } from "./units";

type ValidatorSpec = Extract<NodeSpec, { role: "validator" }>;

/** The release a validator moves to, and the network's height it moves at (config `validator.upgrade`). */
export interface ValidatorUpgrade {
    readonly release: ValidatorRelease;
    readonly height: number;
}

/** The watcher's unit (the host tool disarms it by this name when the config no longer has the upgrade). */
export const upgradeWatcherUnit = (node: string): string => `nodefleet-upgrade-${node}.service`;

/** Where the configure step stages the new release's units. */
const stagedDir = (node: ValidatorSpec, mount: string) => `${validatorPaths(node, mount).etcDir}/upgrade`;

/** The settings' `upgrade` block: what the host tool reads to arm, report and swap. */
export function upgradeSettings(node: ValidatorSpec, mount: string, upgrade: ValidatorUpgrade) {
    return {
        release: upgrade.release.name,
        height: upgrade.height,
        units: stagedDir(node, mount),
        releaseDir: releaseDir(upgrade.release),
    };
}

/** The watcher's unit: `zg-validator.py <settings> upgrade-watch`, restarted when it fails. */
export function renderUpgradeWatcher(node: ValidatorSpec, upgrade: ValidatorUpgrade): string {
    const p = validatorPaths(node, "/");
    return render("nodefleet-upgrade.service", {
        node: node.name,
        height: upgrade.height,
        release: upgrade.release.name,
        consensus: p.consensusService,
        tool: `${HOST_LIB}/zg-validator.py`,
        settings: `${p.etcDir}/validator.json`,
    });
}

export interface StagedFile {
    readonly name: string;
    readonly text: string;
}

/** The files the configure step stages for the upgrade: the new release's three units and the watcher. */
export function upgradeFiles(node: ValidatorSpec, mount: string, upgrade: ValidatorUpgrade, publicIp: string, metrics: boolean) {
    const names = unitNames(validatorPaths(node, mount));
    const units: StagedFile[] = [
        { name: names.consensus, text: renderConsensusUnit(node, mount, upgrade.release) },
        { name: names.geth, text: renderGethUnit(node, mount, upgrade.release, publicIp, metrics) },
        { name: names.reth, text: renderRethUnit(node, mount, upgrade.release, publicIp, metrics) },
    ];
    return {
        dir: stagedDir(node, mount),
        units,
        watcher: { name: upgradeWatcherUnit(node.name), text: renderUpgradeWatcher(node, upgrade) },
    };
}
