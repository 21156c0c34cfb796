// Builds the same thing index.ts builds, with a recorder attached, for mock tests.
import { loadStack } from "../../components/config/load";
import { Fleet, previousValidatorHosts } from "../../components/fleet/fleet";
import { installMocks, recorder, settle, setStackConfig, Recorded } from "./mocks";

export async function buildStack(fleetConfig: unknown, secrets: Record<string, string>, plainKeys: readonly string[] = []): Promise<{ fleet: Fleet; recorded: Recorded[] }> {
    installMocks();
    setStackConfig(fleetConfig, secrets, plainKeys);
    const { transformation, recorded } = recorder();
    const { plan, secret } = loadStack();
    const fleet = await Fleet.build("fleet", { plan, secret, previousValidatorHosts: await previousValidatorHosts() }, { transformations: [transformation] });
    await settle(recorded);
    // The fleet's own outputs (health reports) resolve after its children: wait for them too,
    // so nothing of this stack is still registering when the next test installs new mocks.
    await Promise.all([...Object.values(fleet.health), ...Object.values(fleet.registration), ...Object.values(fleet.validatorSwitch)].map((o) => new Promise((resolve) => o.apply(resolve))));
    await new Promise((resolve) => setImmediate(resolve));
    return { fleet, recorded };
}
