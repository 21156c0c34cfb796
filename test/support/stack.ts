// Builds the same thing index.ts builds, with a recorder attached, for mock tests.
import { loadFleet, secretValue } from "../../components/config/load";
import { Fleet } from "../../components/fleet";
import { installMocks, recorder, settle, setStackConfig, Recorded } from "./mocks";

export async function buildStack(fleetConfig: unknown, secrets: Record<string, string>, plainKeys: readonly string[] = []): Promise<{ fleet: Fleet; recorded: Recorded[] }> {
    installMocks();
    setStackConfig(fleetConfig, secrets, plainKeys);
    const { transformation, recorded } = recorder();
    const plan = loadFleet();
    const fleet = new Fleet("fleet", { plan, secret: secretValue }, { transformations: [transformation] });
    await settle(recorded);
    return { fleet, recorded };
}
