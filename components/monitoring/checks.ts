// Each node's read-only health command, as an argv (no shell on the host): what `nodefleet status`
// runs over SSH and the host's health timer runs every interval; the answer goes through the one
// diagnosis table (hostfiles/nodefleet_health.py) either way.
import * as path from "node:path";
import type { NodeSpec } from "../config/schema";
import { HOST_LIB } from "../hosts/scripts";
import { validatorPaths } from "../roles/validator";

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
