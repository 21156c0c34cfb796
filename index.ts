// nodefleet entry point: read and validate the stack config once, build the fleet,
// export what operators look at. All logic lives in components/.
import { loadFleet, readStackConfig } from "./components/config/load";
import { Fleet } from "./components/fleet";

const config = readStackConfig();
const plan = loadFleet(config);
const fleet = new Fleet("fleet", { plan, secret: (key) => config.secret(key) });

export const hosts = fleet.summary;
export const hardwareCheck = plan.spec.hardwareCheck;
/** Per node, the health report taken at the end of the last `pulumi up`. */
export const health = fleet.health;
/** Per sequencer, its validator registration: status in the registry and what was done. */
export const registration = fleet.registration;
/** Per validator with `switch` set: the geth -> reth switch's report (or its rollback / cleanup). */
export const validatorSwitch = fleet.validatorSwitch;
