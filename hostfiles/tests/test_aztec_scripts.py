"""The sequencer's host scripts run for real: aztec-register.py against a local L1 JSON-RPC server
and the aztec simulator as the CLI, aztec-health.py's parsers on real log shapes. (systemd and
the journal, which aztec-health.py also reads, are proven on the dev VMs.)

    cd hostfiles && python3 -m unittest discover -s tests -t .
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock
from http.server import BaseHTTPRequestHandler, HTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTFILES = os.path.dirname(HERE)
SIM = os.path.join(os.path.dirname(HOSTFILES), "lab", "sim")
KEY = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
VALIDATOR = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
REGISTRY = "0x00000000000000000000000000000000000a2ec1"
# Recorded from the real Aztec 4.1.2 node on the dev L1: its getL2Tips answer and log lines.
FIXTURES = os.path.join(HERE, "fixtures", "aztec-4.1.2")


def load(name):
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), os.path.join(HOSTFILES, name))
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, HOSTFILES)
    spec.loader.exec_module(module)
    return module


class L1(HTTPServer):
    """eth_call answers from `self.answer(params)`; every request is kept."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests = []
        self.answer = lambda params: {"result": "0x" + "00" * 96 + "00" * 31 + "00"}
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(req)
        body = json.dumps({"jsonrpc": "2.0", "id": req["id"], **self.server.answer(req["params"])}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def status_word(n):
    return {"result": "0x" + "00" * 32 * 3 + f"{n:064x}"}


class Register(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.l1 = L1()
        self.addCleanup(self.l1.server_close)
        self.addCleanup(self.l1.shutdown)
        self.argv_log = os.path.join(self.dir, "argv.log")
        # The CLI: the aztec simulator, behind a wrapper that records each command line it gets.
        self.binary = os.path.join(self.dir, "aztec")
        with open(self.binary, "w") as f:
            f.write(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {self.argv_log}\nPYTHONPATH={SIM} exec {sys.executable} -m nodefleet_sim.aztec "$@"\n')
        os.chmod(self.binary, 0o755)
        self.env_file = os.path.join(self.dir, "register.env")
        with open(self.env_file, "w") as f:
            f.write(f"PRIVATE_KEY={KEY}\n")
        self.data = os.path.join(self.dir, "data")
        os.makedirs(self.data)

    def settings(self, urls=None):
        handler = "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB"
        urls = urls or [self.l1.url]
        # The L1 URLs are in the root-only env file, as ETHEREUM_HOSTS (what the CLI reads for --l1-rpc-urls).
        with open(self.env_file, "w") as f:
            f.write(f"PRIVATE_KEY={KEY}\nETHEREUM_HOSTS={','.join(urls)}\n")
        return {"dialect": "staking-asset-handler", "runtime": "release", "binary": self.binary, "image": "aztecprotocol/aztec",
                "versionFile": "/nonexistent", "dataDir": self.data, "l1ChainId": 11155111, "registryAddress": REGISTRY,
                "validatorAddress": VALIDATOR, "stakingAssetHandler": handler, "registerEnvFile": self.env_file, "argvPreload": None,
                # What nodefleet renders for 2.0.2 (components/roles/sequencer/aztec-versions.ts).
                "args": ["add-l1-validator", "--attester", VALIDATOR, "--proposer-eoa", VALIDATOR,
                         "--staking-asset-handler", handler, "--l1-chain-id", "11155111"]}

    def run_register(self, settings=None, env=None):
        r = subprocess.run([sys.executable, os.path.join(HOSTFILES, "aztec-register.py"), "sequencer-1"], input=json.dumps(settings or self.settings()),
                           capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=60)
        summary = json.loads(r.stdout.strip().split("\n")[-1]) if r.returncode == 0 else None
        return r, summary

    def cli_runs(self):
        try:
            with open(self.argv_log) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def test_selector_is_keccak_of_the_signature(self):
        sys.path.insert(0, SIM)
        from nodefleet_sim import common
        self.assertEqual(load("aztec-register.py").GET_INFO, common.keccak256(b"getInfo(address)")[:4].hex())

    def test_asks_get_info_with_the_abi_encoded_address(self):
        self.l1.answer = lambda params: status_word(1)
        r, _ = self.run_register()
        self.assertEqual(r.returncode, 0, r.stderr)
        call = self.l1.requests[0]
        self.assertEqual(call["method"], "eth_call")
        self.assertEqual(call["params"][0], {"to": REGISTRY, "data": "0xffdd5cf1" + "00" * 12 + VALIDATOR[2:].lower()})
        self.assertEqual(call["params"][1], "latest")

    def test_registered_validator_is_skipped(self):
        self.l1.answer = lambda params: status_word(2)
        r, summary = self.run_register()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(summary["status"], "LIVING")
        self.assertEqual(summary["action"], "none: already registered")
        self.assertEqual(self.cli_runs(), [])

    def test_unregistered_validator_is_registered_with_the_key_off_the_command_line_then_not_resubmitted(self):
        r, summary = self.run_register()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(summary["action"], "submitted")
        self.assertRegex(summary["transaction"], r"^0x[0-9a-f]{64}$")
        runs = self.cli_runs()
        self.assertEqual(len(runs), 1)
        self.assertTrue(runs[0].startswith("add-l1-validator --attester "), runs[0])
        # The L1 URL (it may carry an API key) reaches the CLI as ETHEREUM_HOSTS, not its command line;
        # the simulator took it from there (the registration was sent to the local L1).
        self.assertNotIn(self.l1.url, runs[0])
        for flag in ("--attester", "--proposer-eoa", "--staking-asset-handler", "--l1-chain-id 11155111"):
            self.assertIn(flag, runs[0])
        self.assertNotIn("--private-key", runs[0])
        self.assertNotIn(KEY[2:], runs[0])
        self.assertNotIn(KEY[2:], r.stdout + r.stderr)
        # The registry still says NONE (the registration is queued): pending, not sent again.
        r, summary = self.run_register()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(summary["action"], "none: submitted earlier, pending")
        self.assertEqual(len(self.cli_runs()), 1)

    def test_quota_filled_becomes_a_message_with_the_time_to_retry(self):
        until = int(time.time()) + 7200
        r, _ = self.run_register(env={"NODEFLEET_SIM_VALIDATOR_QUOTA_FILLED_UNTIL": str(until)})
        self.assertEqual(r.returncode, 3, r.stderr)
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(until))
        self.assertIn(f"validator quota is filled until {when} (ValidatorQuotaFilledUntil({until}))", r.stderr)
        self.assertIn("run `pulumi up` again after that time", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.data, ".nodefleet-registration.json")), "a reverted registration is not recorded")

    def test_falls_over_to_the_next_l1_url(self):
        self.l1.answer = lambda params: status_word(1)
        r, summary = self.run_register(self.settings(["http://127.0.0.1:9", self.l1.url]))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(summary["l1RpcUrl"], self.l1.url)

    def test_bad_answers_are_clear_errors(self):
        cases = [
            ({"result": "0x"}, "returned 0 words, expected 4 (stake, withdrawer, proposer, status): is registryAddress the validator registry on chain 11155111?"),
            ({"result": 12}, "eth_call result is not hex data"),
            (status_word(9), "status 9 is not one of NONE=0, VALIDATING=1, LIVING=2, EXITING=3"),
            ({"error": {"code": -32000, "message": "execution reverted"}}, "no L1 RPC URL answered getInfo: eth_call at http://127.0.0.1:"),
        ]
        for answer, message in cases:
            self.l1.answer = lambda params, a=answer: a
            r, _ = self.run_register()
            self.assertEqual(r.returncode, 1, answer)
            self.assertIn("sequencer sequencer-1: registration: ", r.stderr)
            self.assertIn(message, r.stderr)
        self.assertEqual(self.cli_runs(), [], "nothing is sent when the registry cannot be read")

    def test_settings_that_are_not_json_are_refused(self):
        r = subprocess.run([sys.executable, os.path.join(HOSTFILES, "aztec-register.py"), "sequencer-1"], input="{", capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("the registration settings on stdin are not JSON", r.stderr)


ROLLUP = "0x3e55e04ab1bf5f8ad63cf85927157947d6bf15a1"
BLS = "0x2a1f5c0e6b7d8e9f00112233445566778899aabbccddeeff0011223344556677"


class RegisterRollupDeposit(unittest.TestCase):
    """4.1.2's dialect against a scripted L1 (eth_chainId, getStatus, the entry queue) and a CLI stand-in
    that records its argv, which variables it got and what the argv preload made of its argv. The real
    CLI and real contracts: the e2e tier (test/e2e/dev-stack.test.ts, 'registration on real Aztec L1 contracts')."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.l1 = L1()
        self.addCleanup(self.l1.server_close)
        self.addCleanup(self.l1.shutdown)
        self.status = 0
        self.queue = []
        self.chain_id = 11155111
        self.l1.answer = self.answer
        self.record = os.path.join(self.dir, "cli.json")
        # A node program, as the real CLI is, so NODE_OPTIONS --import runs the real preload in it.
        self.binary = os.path.join(self.dir, "aztec")
        script = os.path.join(self.dir, "cli.mjs")
        with open(script, "w") as f:
            f.write("import fs from 'node:fs';\n"
                    f"fs.appendFileSync({json.dumps(self.record)}, JSON.stringify({{argv: process.argv.slice(2), "
                    "env: Object.keys(process.env).filter((k) => /KEY|MNEMONIC/.test(k)), blsInEnv: process.env.NODEFLEET_BLS_SECRET_KEY ?? null, "
                    "privateKey: process.env.PRIVATE_KEY ?? null}) + '\\n');\n"
                    "console.log('Transaction hash: 0x' + 'ab'.repeat(32));\n")
        with open(self.binary, "w") as f:
            f.write(f'#!/bin/sh\nexec node {script} "$@"\n')
        os.chmod(self.binary, 0o755)
        self.env_file = os.path.join(self.dir, "register.env")
        self.write_env(f"PRIVATE_KEY={KEY}\nNODEFLEET_BLS_SECRET_KEY={BLS}\n")
        self.data = os.path.join(self.dir, "data")
        os.makedirs(self.data)

    def write_env(self, text):
        with open(self.env_file, "w") as f:
            f.write(text + f"ETHEREUM_HOSTS={self.l1.url}\n")

    def answer(self, params):
        if not params:
            return {"result": hex(self.chain_id)}
        data = params[0]["data"]
        if data.startswith("0x30ccebb5"):
            return {"result": "0x" + f"{self.status:064x}"}
        if data == "0x1b56a0e7":
            return {"result": "0x" + f"{len(self.queue):064x}"}
        if data.startswith("0x9ca03702"):
            attester = self.queue[int(data[10:], 16)]
            return {"result": "0x" + attester.lower()[2:].rjust(64, "0") + "00" * 32 * 10}
        return {"error": {"code": -32000, "message": "execution reverted"}}

    def settings(self):
        return {"dialect": "rollup-deposit", "runtime": "release", "binary": self.binary, "image": "aztecprotocol/aztec",
                "versionFile": "/nonexistent", "dataDir": self.data, "l1ChainId": 11155111,
                "validatorAddress": VALIDATOR, "rollupAddress": ROLLUP, "registerEnvFile": self.env_file,
                "argvPreload": os.path.join(HOSTFILES, "aztec-argv.mjs"),
                "args": ["add-l1-validator", "--l1-chain-id", "11155111", "--attester", VALIDATOR,
                         "--withdrawer", VALIDATOR, "--rollup", ROLLUP]}

    def run_register(self):
        r = subprocess.run([sys.executable, os.path.join(HOSTFILES, "aztec-register.py"), "sequencer-1"], input=json.dumps(self.settings()),
                           capture_output=True, text=True, timeout=60)
        summary = json.loads(r.stdout.strip().split("\n")[-1]) if r.returncode == 0 else None
        return r, summary

    def cli_runs(self):
        try:
            with open(self.record) as f:
                return [json.loads(line) for line in f]
        except FileNotFoundError:
            return []

    def test_selectors_are_keccak_of_the_signatures(self):
        sys.path.insert(0, SIM)
        from nodefleet_sim import common
        register = load("aztec-register.py")
        for name, signature in (("GET_STATUS", b"getStatus(address)"), ("QUEUE_LENGTH", b"getEntryQueueLength()"), ("QUEUE_AT", b"getEntryQueueAt(uint256)")):
            self.assertEqual(getattr(register, name), common.keccak256(signature)[:4].hex(), name)

    def test_unregistered_is_deposited_with_the_keys_off_every_command_line_then_seen_queued(self):
        r, summary = self.run_register()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(summary["action"], "submitted")
        [run] = self.cli_runs()
        # The preload appended the BLS key inside the process and removed its variable.
        self.assertEqual(run["argv"], self.settings()["args"][0:] + ["--bls-secret-key", BLS])
        self.assertIsNone(run["blsInEnv"])
        self.assertEqual(run["privateKey"], KEY)
        for secret in (KEY[2:], BLS[2:]):
            self.assertNotIn(secret, r.stdout + r.stderr)
        # The deposit waits in the entry queue: found there, nothing sent again.
        self.queue = ["0x" + "11" * 20, VALIDATOR, "0x" + "22" * 20]
        r, summary = self.run_register()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual((summary["status"], summary["action"], summary["queuePosition"]), ("QUEUED", "none: queued", 1))
        self.assertEqual(len(self.cli_runs()), 1)

    def test_validating_is_registered(self):
        self.status = 1
        r, summary = self.run_register()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual((summary["status"], summary["action"]), ("VALIDATING", "none: already registered"))
        self.assertEqual(self.cli_runs(), [])

    def test_refuses_without_its_keys_or_on_another_chain_sending_nothing(self):
        cases = [
            ("", "holds no sender key (PRIVATE_KEY, 0x and 64 hex digits): nothing sent; add-l1-validator would send from its public test mnemonic"),
            (f"PRIVATE_KEY=\nNODEFLEET_BLS_SECRET_KEY={BLS}\n", "holds no sender key"),
            (f"PRIVATE_KEY={KEY}\n", "holds no BLS secret key (NODEFLEET_BLS_SECRET_KEY): nothing sent"),
        ]
        for text, message in cases:
            self.write_env(text)
            r, _ = self.run_register()
            self.assertEqual(r.returncode, 1, text)
            self.assertIn(message, r.stderr)
        self.write_env(f"PRIVATE_KEY={KEY}\nNODEFLEET_BLS_SECRET_KEY={BLS}\n")
        self.chain_id = 16661
        r, _ = self.run_register()
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"{self.l1.url} is L1 chain 16661, not l1ChainId 11155111: nothing sent", r.stderr)
        self.assertEqual(self.cli_runs(), [])

    def test_a_rollup_that_is_not_one_is_a_clear_error(self):
        self.l1.answer = lambda params: {"result": hex(11155111)} if not params else {"result": "0x"}
        r, _ = self.run_register()
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"getStatus at {self.l1.url}: rollup {ROLLUP} returned 0 bytes, expected one word: is rollupAddress the rollup on chain 11155111?", r.stderr)


class Health(unittest.TestCase):
    def setUp(self):
        self.health = load("aztec-health.py")

    def test_proven_number_accepts_a_number_or_numeric_string_only(self):
        pn = lambda tips: self.health.tip(tips, "2.0.x", "proven")[0]  # noqa: E731
        self.assertEqual(pn({"proven": {"number": 41}}), 41)
        self.assertEqual(pn({"proven": {"number": "41"}}), 41)
        for bad in ({"proven": {"number": "0x29"}}, {"proven": {"number": -1}}, {"proven": {"number": True}}, {"proven": {}}, {"latest": {"number": 1}}, None, [1]):
            with self.assertRaises(ValueError, msg=bad) as cm:
                pn(bad)
            self.assertIn("node_getL2Tips: result.proven.number", str(cm.exception))

    def test_peer_id_from_coloured_and_json_log_lines(self):
        peer = "16Uiu2HAmLhLvBoYaoZfaMUKuibM6ac163GwKY74c5kiSLg5KvLpY"
        coloured = f'\x1b[90m[12:00:01]\x1b[39m \x1b[32mINFO\x1b[39m: \x1b[35mp2p\x1b[39m \x1b[36mStarted P2P service\x1b[39m {{"peerId": "\x1b[33m{peer}\x1b[39m", "listenAddress": "0.0.0.0:40400"}}'
        as_json = json.dumps({"level": "info", "module": "p2p", "msg": "Started P2P service", "peerId": peer[:-1] + "Z"})
        self.assertEqual(self.health.peer_id(["unrelated", coloured]), peer)
        self.assertEqual(self.health.peer_id([coloured, as_json]), peer[:-1] + "Z", "the newest line wins")
        self.assertIsNone(self.health.peer_id(["Started P2P service {}", "peerId: 0x12"]))


    def test_tips_of_4_1_2_as_the_real_node_answers_them(self):
        # Recorded from the real 4.1.2 node on the dev L1 (fixtures/aztec-4.1.2/l2tips.json): blocks sit
        # under proven.block / proposed, not the spec's proven.number.
        with open(os.path.join(FIXTURES, "l2tips.json")) as f:
            tips = json.load(f)
        self.assertEqual(self.health.tip(tips, "4.1.2", "proven"), (0, tips["proven"]["block"]["hash"]))
        self.assertEqual(self.health.tip(tips, "4.1.2", "latest")[0], tips["proposed"]["number"])
        with self.assertRaises(ValueError) as cm:
            self.health.tip(tips, "2.0.x", "proven")  # read as 2.0.x, the real answer has no proven.number
        self.assertIn("result.proven.number is missing", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            self.health.tip({"proven": {"number": 3}}, "4.1.2", "proven")
        self.assertIn("result.proven.block.number is missing", str(cm.exception))

    def test_peer_id_from_the_real_4_1_2_log_line(self):
        with open(os.path.join(FIXTURES, "journal-started.jsonl")) as f:
            line = f.read().strip()
        self.assertEqual(self.health.peer_id([line]), json.loads(line)["peerId"])

    def test_l1_failure_from_the_real_log_recent_only_and_without_the_url_path(self):
        with open(os.path.join(FIXTURES, "journal-l1-down-at-start.jsonl")) as f:
            line = f.read().strip()
        when = json.loads(line)["time"]
        # The node's own line names the whole URL; the health answer names scheme, host and port.
        keyed = line.replace("http://127.0.0.1:28545", "https://l1.example.org/v2/SECRETKEY")
        self.assertEqual(self.health.l1_failure([keyed], when + 1000), "https://l1.example.org/…")
        self.assertEqual(self.health.l1_failure([line], when + 1000), "http://127.0.0.1:28545")
        self.assertIsNone(self.health.l1_failure([line], when + self.health.L1_FAILURE_WINDOW_MS + 1))
        # A crash's raw stack trace (not the node's JSON) does not count on its own.
        self.assertIsNone(self.health.l1_failure(["ContractFunctionExecutionError: HTTP request failed.", "URL: http://10.0.0.1:8545"], when))
        # A failure of an earlier run (another pid) no longer counts once the node started again.
        restarted = json.dumps({"level": 30, "time": when + 500, "pid": json.loads(line)["pid"] + 1, "module": "node", "msg": "Aztec Node started on chain 0x4115"})
        self.assertIsNone(self.health.l1_failure([line, restarted], when + 1000))

    def check(self, state, tips, witness, lines):
        """check() with systemd, the node's RPC and its journal standing in: its answer."""
        def rpc(url, method, params=None, optional=False):
            answer = {"node_getL2Tips": tips, "node_getBlockHashMembershipWitness": witness}[method]
            if isinstance(answer, Exception):
                raise answer
            return answer
        ran = subprocess.CompletedProcess([], 0, stdout=state + "\n", stderr="")
        spec = {"rpcPort": 8080, "service": "aztec-s1.service", "api": "4.1.2"}
        with mock.patch.object(self.health, "rpc", rpc), mock.patch.object(self.health, "journal", lambda unit: lines), \
                mock.patch.object(self.health.subprocess, "run", lambda *a, **k: ran):
            return self.health.check("s1", spec)

    def test_its_diagnoses_are_the_diagnosis_tables_with_the_fault_tables_remedies(self):
        tips = {"proposed": {"number": 9}, "proven": {"block": {"number": 7, "hash": "0x07"}}}
        started = json.dumps({"level": 30, "time": 1, "pid": 4, "msg": "Started P2P service", "peerId": "16Uiu2HAmF81mgPtXHUJQCpb7HqA2fz3EPGfygEh6CPLHxQuTSs29"})
        healthy = self.check("active", tips, ["0x1", "0x2"], [started])
        self.assertEqual((healthy["provenBlock"], healthy["latestBlock"], healthy["diagnoses"]), (7, 9, []))
        from nodefleet_faults import FAULTS
        down = self.check("failed", self.health.RpcFailure("connection refused"), None, [])
        self.assertEqual([d["fault"] for d in down["diagnoses"]], ["service-down", "sequencer-rpc-down"])
        self.assertEqual(down["diagnoses"][0]["remedy"], FAULTS["service-down"]["remedy"].replace("<unit>", "aztec-s1.service"))
        self.assertEqual(down["diagnoses"][1]["detail"], "node_getL2Tips: connection refused")
        no_path = self.check("active", tips, None, [started])
        self.assertEqual([(d["fault"], d["remedy"]) for d in no_path["diagnoses"]], [("sibling-path-missing", FAULTS["sibling-path-missing"]["remedy"])])


if __name__ == "__main__":
    unittest.main()
