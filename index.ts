// nodefleet entry point: read and validate the stack config once, build the fleet,
// export what operators look at. All logic lives in components/.
import { loadStack } from "./components/config/load";
import { Fleet, previousValidatorHosts } from "./components/fleet/fleet";
import { checkShards } from "./components/fleet/shards";
import { withRefusalsUnstacked } from "./components/fleet/sdk";

const stack = loadStack();
const plan = stack.plan;
/** Stack outputs: what operators look at. */
export = () =>
    withRefusalsUnstacked(async () => {
        // A shard of a larger fleet: refused when another shard holds one of its nodes, keys or hosts.
        const signingKeys = await checkShards(plan, (key) => plan.secrets.get(key));
        const fleet = await Fleet.build("fleet", {
            plan,
            secret: (key) => stack.secret(key),
            previousValidatorHosts: await previousValidatorHosts(),
        });
        return {
            hosts: fleet.summary,
            hardwareCheck: plan.spec.hardwareCheck,
            /** Per node, the health report taken at the end of the last `pulumi up`. */
            health: fleet.health,
            /** Per sequencer, its validator registration: status in the registry and what was done. */
            registration: fleet.registration,
            /** Per validator with `switch` set: the geth -> reth switch's report (or its rollback / cleanup). */
            validatorSwitch: fleet.validatorSwitch,
            /** Per validator, the host it runs on: the next `up` reads it to hand a moving validator over. */
            validatorHosts: fleet.validatorHosts,
            /** Per validator and sequencer, the public identity of its signing key: the other shards check theirs against it. */
            signingKeys,
            /** Per existing host with `firstBoot: cloud-init`: the user-data to boot it with (a secret: it holds its first-boot key). */
            ...(Object.keys(fleet.firstBootUserData).length > 0 ? { firstBootUserData: fleet.firstBootUserData } : {}),
        };
    });
