// The dev L1's side of an Aztec registration, for the e2e tier: what an operator does by hand
// before nodefleet registers a 4.x validator (fund the sender with ETH and the activation
// threshold of the staking asset, approve the rollup), and what the network does after (flush the
// rollup's entry queue). Real transactions on the dev chain through viem from the Aztec install.
//
//   node lab/aztec/l1.mjs INSTALL_DIR fund   RPC_URL ROLLUP   (keys: $DEPLOYER_KEY, $SENDER_KEY)
//   node lab/aztec/l1.mjs INSTALL_DIR flush  RPC_URL ROLLUP   (sender: $DEPLOYER_KEY)
//   node lab/aztec/l1.mjs INSTALL_DIR status RPC_URL ROLLUP ATTESTER
//   node lab/aztec/l1.mjs INSTALL_DIR address RPC_URL ROLLUP  ($SENDER_KEY's address)
//   node lab/aztec/l1.mjs INSTALL_DIR topup  RPC_URL ETH      ($PAYER_KEY pays $SENDER_KEY's address
//                                                              up to ETH ether; nothing when it holds that)
//   node lab/aztec/l1.mjs INSTALL_DIR funded RPC_URL ROLLUP   (exit 0 when $SENDER_KEY's address holds ETH
//                                                              and either is registered or queued, or holds the
//                                                              staking asset the rollup asks, approved)
// Progress goes to stderr; `status` prints {status, queued} as JSON on stdout.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import * as path from "node:path";

const [dir, command, url, rollup, attester] = process.argv.slice(2);
const require = createRequire(path.join(dir, "package.json"));
const viem = await import(pathToFileURL(require.resolve("viem")).href);
const { privateKeyToAccount } = await import(pathToFileURL(require.resolve("viem/accounts")).href);
const { RollupAbi } = await import(pathToFileURL(require.resolve("@aztec/l1-artifacts/RollupAbi")).href);
const { TestERC20Abi } = await import(pathToFileURL(require.resolve("@aztec/l1-artifacts/TestERC20Abi")).href);

const say = (text) => process.stderr.write(`[l1] ${text}\n`);
const transport = viem.http(url);
const publicClient = viem.createPublicClient({ transport });
const chain = { id: await publicClient.getChainId(), name: "dev", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [url] } } };
const wallet = (key) => viem.createWalletClient({ account: privateKeyToAccount(key), chain, transport });
const read = (functionName, args = []) => publicClient.readContract({ address: rollup, abi: RollupAbi, functionName, args });

/** Where an attester waits in the rollup's entry queue (its last place), or null. */
async function queuePosition(who) {
    const length = Number(await read("getEntryQueueLength"));
    let at = null;
    for (let i = 0; i < length; i++) if ((await read("getEntryQueueAt", [BigInt(i)])).attester.toLowerCase() === who.toLowerCase()) at = i;
    return at;
}

async function send(client, request, what) {
    const hash = await client.writeContract(request);
    const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 120_000 });
    if (receipt.status !== "success") throw new Error(`${what}: transaction ${hash} reverted`);
    say(`${what}: ${hash}`);
}

if (command === "fund") {
    const deployer = wallet(process.env.DEPLOYER_KEY);
    const sender = wallet(process.env.SENDER_KEY);
    const asset = await read("getStakingAsset");
    const threshold = await read("getActivationThreshold");
    const to = sender.account.address;
    const hash = await deployer.sendTransaction({ to, value: viem.parseEther("10") });
    await publicClient.waitForTransactionReceipt({ hash, timeout: 120_000 });
    say(`sent 10 ETH to ${to}`);
    await send(deployer, { address: asset, abi: TestERC20Abi, functionName: "mint", args: [to, threshold] }, `minted ${threshold} of the staking asset ${asset} to ${to}`);
    await send(sender, { address: asset, abi: TestERC20Abi, functionName: "approve", args: [rollup, threshold] }, `approved the rollup ${rollup} for ${threshold}`);
} else if (command === "flush") {
    const deployer = wallet(process.env.DEPLOYER_KEY);
    // The queue flushes once per epoch: retry (bounded) until an epoch allows it.
    for (let attempt = 1; ; attempt++) {
        try {
            await send(deployer, { address: rollup, abi: RollupAbi, functionName: "flushEntryQueue", args: [] }, "flushed the entry queue");
            break;
        } catch (e) {
            if (attempt >= 60) throw e;
            await new Promise((r) => setTimeout(r, 5000));
        }
    }
} else if (command === "topup") {
    const payer = wallet(process.env.PAYER_KEY);
    const to = privateKeyToAccount(process.env.SENDER_KEY).address;
    const want = viem.parseEther(rollup);
    const has = await publicClient.getBalance({ address: to });
    if (has < want) {
        const hash = await payer.sendTransaction({ to, value: want - has });
        await publicClient.waitForTransactionReceipt({ hash, timeout: 120_000 });
        say(`sent ${viem.formatEther(want - has)} ETH to ${to}`);
    }
} else if (command === "funded") {
    const to = privateKeyToAccount(process.env.SENDER_KEY).address;
    const asset = await read("getStakingAsset");
    const threshold = await read("getActivationThreshold");
    const erc20 = (functionName, args) => publicClient.readContract({ address: asset, abi: TestERC20Abi, functionName, args });
    // Registered (or queued) already: its deposit was paid.
    const registered = (await queuePosition(to)) !== null || Number(await read("getStatus", [to])) !== 0;
    const ok = (await publicClient.getBalance({ address: to })) >= viem.parseEther("1") && (registered || ((await erc20("balanceOf", [to])) >= threshold && (await erc20("allowance", [to, rollup])) >= threshold));
    process.exit(ok ? 0 : 1);
} else if (command === "address") {
    process.stdout.write(privateKeyToAccount(process.env.SENDER_KEY).address + "\n");
} else if (command === "status") {
    const status = Number(await read("getStatus", [attester]));
    process.stdout.write(JSON.stringify({ status, queued: await queuePosition(attester) }) + "\n");
} else {
    say("usage: l1.mjs INSTALL_DIR fund|flush|status|address|topup|funded RPC_URL ROLLUP|ETH [ATTESTER]");
    process.exit(64);
}
