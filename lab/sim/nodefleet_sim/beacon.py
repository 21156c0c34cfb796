"""The beacon node API of the 0gchaind SIMULATOR: the part of it an L1 client reads blobs with.

Real 0gchaind is beacon-kit, whose node API (app.toml `[beacon-kit.node-api]` enabled/address)
serves the Ethereum beacon API. Aztec's blob client (@aztec/blob-client, client/http.js) reads
blobs through it: `GET /eth/v1/beacon/headers` to see the host answers, `headers/<root>` to turn
an execution block's parentBeaconBlockRoot into a slot, `headers/head` for the newest slot, and
`blob_sidecars/<slot>` for the blobs themselves (it reads `blob` and `kzg_commitment`).

The simulator makes one block per slot, so the slot is the block number, and the root of the
beacon block at slot N is keccak256 of execution block N's hash: the parentBeaconBlockRoot the
simulator hands the execution client for block N+1 (zerog.Engine.build). Blob sidecars are those
of the payload's blobsBundle (engine_getPayloadV3), kept under data/blobs/<slot>.json.
"""
import json
import os
import re

from . import common

ZERO32 = "0x" + "00" * 32
KEEP_SLOTS = 1000  # as many as the state keeps hashes of


def block_root(block_hash):
    """The beacon block root of the slot whose execution block has this hash."""
    return "0x" + common.keccak256(block_hash.encode()).hex()


class BlobStore:
    """Blob sidecars by slot, in <home>/data/blobs (they outlive a restart of the daemon)."""

    def __init__(self, home):
        self.dir = os.path.join(home, "data", "blobs")
        os.makedirs(self.dir, exist_ok=True)

    def put(self, slot, bundle):
        """Keeps a payload's blobsBundle ({commitments, proofs, blobs}) as the slot's sidecars."""
        sidecars = [{"index": str(i), "blob": blob, "kzg_commitment": c, "kzg_proof": p}
                    for i, (blob, c, p) in enumerate(zip(bundle["blobs"], bundle["commitments"], bundle["proofs"]))]
        if sidecars:
            path = os.path.join(self.dir, f"{slot}.json")
            with open(path + ".tmp", "w") as f:
                json.dump(sidecars, f)
            os.replace(path + ".tmp", path)
        for name in os.listdir(self.dir):
            m = re.fullmatch(r"(\d+)\.json", name)
            if m and int(m.group(1)) < slot - KEEP_SLOTS:
                os.remove(os.path.join(self.dir, name))

    def get(self, slot):
        try:
            with open(os.path.join(self.dir, f"{slot}.json")) as f:
                return json.load(f)
        except FileNotFoundError:
            return []


def handler(state, blobs):
    """GET handler for the beacon API over the daemon's state ({height, hashes}): path -> (status, body)."""

    def slot_of(block_id):
        height = state["height"]
        if block_id in ("head", "finalized", "justified"):
            return height if str(height) in state["hashes"] else None
        if re.fullmatch(r"[0-9]+", block_id):
            slot = int(block_id)
            return slot if str(slot) in state["hashes"] and slot <= height else None
        if re.fullmatch(r"0x[0-9a-fA-F]{64}", block_id):
            for slot, block_hash in list(state["hashes"].items()):  # the daemon adds to it meanwhile
                if block_root(block_hash) == block_id.lower():
                    return int(slot)
        return None

    def header(slot):
        parent = state["hashes"].get(str(slot - 1))
        message = {"slot": str(slot), "proposer_index": "0", "parent_root": block_root(parent) if parent else ZERO32,
                   "state_root": ZERO32, "body_root": ZERO32}
        return {"root": block_root(state["hashes"][str(slot)]), "canonical": True,
                "header": {"message": message, "signature": "0x" + "00" * 96}}

    def ok(data):
        return 200, {"execution_optimistic": False, "finalized": True, "data": data}

    def missing(what):
        return 404, {"code": 404, "message": f"{what} not found"}

    def get(path):
        parts = path.split("?")[0].rstrip("/").split("/")
        if parts[:4] != ["", "eth", "v1", "beacon"] or len(parts) < 5:
            return None
        kind, rest = parts[4], parts[5:]
        if kind == "headers" and not rest:
            slot = slot_of("head")
            return ok([header(slot)] if slot is not None else [])
        if kind in ("headers", "blob_sidecars") and len(rest) == 1:
            slot = slot_of(rest[0])
            if slot is None:
                return missing(f"block {rest[0]}")
            return ok(header(slot) if kind == "headers" else blobs.get(slot))
        return None

    return get
