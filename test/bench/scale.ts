// Scale benchmark (a report, not a gate): evaluates generated fleets of 10, 100 and 1000 nodes,
// each node on its own existing host, under the strict mocks (config read and checked, every
// component and remote step registered, as `pulumi preview` does minus the engine). Each size
// runs in a child process of its own so its peak RSS is its own. Side by side in the same run, on
// the same fleets: nodefleet as it is ("nodefleet"); the SDK's per-key config lookups that its
// loader replaced, every lookup parsing the whole config again ("sdk-lookups"); and the SDK's
// per-promise stack traces left on, as PULUMI_DEBUG_PROMISE_LEAKS does ("promise-traces").
//   node dist/test/bench/scale.js [sizes…]     (scripts/bench.sh scale)
import { spawnSync } from "node:child_process";
import * as pulumi from "@pulumi/pulumi";
import { loadStack, readStackConfig, StackConfig } from "../../components/config/load";
import { Fleet } from "../../components/fleet/fleet";
import { installMocks, recorder, settle, setStackConfig } from "../support/mocks";
import { generate } from "./fleet-gen";

const VARIANTS = ["nodefleet", "sdk-lookups", "promise-traces"] as const;
type Loader = (typeof VARIANTS)[number];

/** The lookups nodefleet used before: the SDK parses the whole config on every call. */
function sdkLookups(): StackConfig {
    const runtimeConfig = require("@pulumi/pulumi/runtime/config") as { isConfigSecret(k: string): boolean; getConfig(k: string): string | undefined };
    return {
        get: (key) => runtimeConfig.getConfig(`nodefleet:${key}`),
        isSecret: (key) => runtimeConfig.isConfigSecret(`nodefleet:${key}`),
        secret: (key) => new pulumi.Config("nodefleet").requireSecret(key),
    };
}

async function child(n: number, loader: Loader): Promise<void> {
    installMocks();
    const { fleet, secrets } = generate(n);
    setStackConfig(fleet, secrets);
    const { transformation, recorded } = recorder();
    const t0 = process.hrtime.bigint();
    const config = loader === "sdk-lookups" ? sdkLookups() : readStackConfig();
    const { plan, secret } = loadStack(config);
    const built = await Fleet.build("fleet", { plan, secret }, { transformations: [transformation] });
    await settle(recorded);
    await Promise.all(Object.values(built.health).map((o) => new Promise((r) => o.apply(r))));
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    process.stdout.write(`${JSON.stringify({ n, loader, ms, resources: recorded.length, maxRssMb: process.resourceUsage().maxRSS / 1024 })}\n`);
}

function parent(sizes: number[]): void {
    const rows: { n: number; loader: Loader; ms: number; resources: number; maxRssMb: number }[] = [];
    for (const n of sizes) {
        for (const loader of VARIANTS) {
            const env = { ...process.env, PULUMI_DEBUG_PROMISE_LEAKS: loader === "promise-traces" ? "1" : "" };
            const r = spawnSync(process.execPath, [__filename, "--child", String(n), loader], { encoding: "utf8", maxBuffer: 1 << 26, env });
            if (r.status !== 0) throw new Error(`n=${n} ${loader} failed:\n${r.stderr.slice(-3000)}`);
            rows.push(JSON.parse(r.stdout.trim().split("\n").pop()!));
        }
    }
    const out = (s: string) => process.stdout.write(`${s}\n`);
    out("nodes  variant         evaluation s   ms/node   resources   peak RSS MB");
    for (const r of rows) out(`${String(r.n).padStart(5)}  ${r.loader.padEnd(15)} ${(r.ms / 1000).toFixed(2).padStart(12)} ${(r.ms / r.n).toFixed(2).padStart(9)} ${String(r.resources).padStart(11)} ${r.maxRssMb.toFixed(0).padStart(13)}`);
    const at = (n: number, l: Loader) => rows.find((r) => r.n === n && r.loader === l)!;
    const [small, large] = [Math.min(...sizes), Math.max(...sizes)];
    out(`ms/node at ${large} / ms/node at ${small} (nodefleet; 1 is linear): ${(at(large, "nodefleet").ms / large / (at(small, "nodefleet").ms / small)).toFixed(2)}`);
    out(`sdk-lookups time / nodefleet time at ${large} nodes: ${(at(large, "sdk-lookups").ms / at(large, "nodefleet").ms).toFixed(2)}`);
    out(`promise-traces time / nodefleet time at ${large} nodes: ${(at(large, "promise-traces").ms / at(large, "nodefleet").ms).toFixed(2)}`);
    const big = at(large, "nodefleet");
    out(`target at ${large} nodes: under 20 s and 1.5 GB: ${big.ms < 20_000 && big.maxRssMb < 1536 ? "met" : "MISSED"} (${(big.ms / 1000).toFixed(1)} s, ${big.maxRssMb.toFixed(0)} MB)`);
}

if (process.argv[2] === "--child") {
    child(Number(process.argv[3]), process.argv[4] as Loader).catch((e) => {
        process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
        process.exit(1);
    });
} else {
    const sizes = process.argv.slice(2).map(Number);
    parent(sizes.length ? sizes : [10, 100, 1000]);
}
