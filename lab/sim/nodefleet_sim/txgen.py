"""txgen: sends real, signed transactions to an EVM JSON-RPC endpoint (the dev hosts' geth), so the
dev chain carries real transactions for the export/import of the geth -> reth switch.

  txgen --rpc http://127.0.0.1:56545 [--count N] [--interval S]

Signs legacy EIP-155 value transfers from the dev account funded in geth-genesis.json (its key
is DEV_KEY below: a public test key, worthless anywhere else) with a small pure-Python secp256k1.
"""
import hashlib
import hmac
import sys
import time

from . import common

P = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F
N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
G = (0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
     0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8)
DEV_KEY = int.from_bytes(common.keccak256(b"nodefleet dev chain funds (public test key)"), "big") % N


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if a[0] == b[0] and (a[1] + b[1]) % P == 0:
        return None
    if a == b:
        lam = 3 * a[0] * a[0] * pow(2 * a[1], -1, P) % P
    else:
        lam = (b[1] - a[1]) * pow(b[0] - a[0], -1, P) % P
    x = (lam * lam - a[0] - b[0]) % P
    return x, (lam * (a[0] - x) - a[1]) % P


def _mul(k, point=G):
    out = None
    while k:
        if k & 1:
            out = _add(out, point)
        point = _add(point, point)
        k >>= 1
    return out


def address_of(key):
    x, y = _mul(key)
    return "0x" + common.keccak256(x.to_bytes(32, "big") + y.to_bytes(32, "big"))[-20:].hex()


def _nonce_k(key, digest):
    """RFC 6979 deterministic k (HMAC-SHA256)."""
    v, k = b"\x01" * 32, b"\x00" * 32
    x = key.to_bytes(32, "big")
    k = hmac.new(k, v + b"\x00" + x + digest, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    k = hmac.new(k, v + b"\x01" + x + digest, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    while True:
        v = hmac.new(k, v, hashlib.sha256).digest()
        cand = int.from_bytes(v, "big")
        if 1 <= cand < N:
            return cand
        k = hmac.new(k, v + b"\x00", hashlib.sha256).digest()
        v = hmac.new(k, v, hashlib.sha256).digest()


def sign(key, digest):
    k = _nonce_k(key, digest)
    r_point = _mul(k)
    r = r_point[0] % N
    s = pow(k, -1, N) * (int.from_bytes(digest, "big") + r * key) % N
    recovery = r_point[1] & 1
    if s > N // 2:
        s, recovery = N - s, recovery ^ 1
    return r, s, recovery


def signed_tx(key, chain_id, nonce, to, value, gas_price, gas=21000, data=b""):
    """A legacy EIP-155 transaction, signed; to=None creates a contract (data: its init code)."""
    fields = [nonce, gas_price, gas, bytes.fromhex(to[2:]) if to else b"", value, data]
    digest = common.keccak256(common.rlp_encode(fields + [chain_id, 0, 0]))
    r, s, rec = sign(key, digest)
    return "0x" + common.rlp_encode(fields + [chain_id * 2 + 35 + rec, r, s]).hex()


def signed_transfer(key, chain_id, nonce, to, value, gas_price):
    return signed_tx(key, chain_id, nonce, to, value, gas_price)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    flags, _ = common.parse_flags(argv, {"rpc", "count", "interval"})
    rpc = flags.get("rpc", "http://127.0.0.1:8545")
    count, interval = int(flags.get("count", "10")), float(flags.get("interval", "0.5"))
    sender = address_of(DEV_KEY)
    chain_id = int(common.rpc_call(rpc, "eth_chainId"), 16)
    nonce = int(common.rpc_call(rpc, "eth_getTransactionCount", [sender, "pending"]), 16)
    gas_price = int(common.rpc_call(rpc, "eth_gasPrice"), 16) * 2
    for i in range(count):
        to = "0x" + common.keccak256(f"recipient-{nonce + i}".encode())[-20:].hex()
        raw = signed_transfer(DEV_KEY, chain_id, nonce + i, to, 1000 + i, gas_price)
        print(common.rpc_call(rpc, "eth_sendRawTransaction", [raw]), flush=True)
        time.sleep(interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
