"""The 0gchaind simulator's beacon node API (nodefleet_sim/beacon.py) on a state and blobs given
here: what Aztec's blob client asks of it, answered as the beacon API shapes them."""
import tempfile
import unittest

from nodefleet_sim import beacon

HASHES = {str(n): "0x%064x" % (0xB10C00 + n) for n in range(1, 6)}
BUNDLE = {"blobs": ["0x" + "11" * 8, "0x" + "22" * 8], "commitments": ["0x" + "aa" * 48, "0x" + "bb" * 48], "proofs": ["0x" + "cc" * 48, "0x" + "dd" * 48]}


class NodeApi(unittest.TestCase):
    def setUp(self):
        self.state = {"height": 5, "hashes": dict(HASHES)}
        self.blobs = beacon.BlobStore(tempfile.mkdtemp())
        self.get = beacon.handler(self.state, self.blobs)

    def test_a_root_names_its_slot_and_head_the_newest(self):
        status, body = self.get(f"/eth/v1/beacon/headers/{beacon.block_root(HASHES['4'])}")
        self.assertEqual(status, 200)
        message = body["data"]["header"]["message"]
        self.assertEqual((message["slot"], message["parent_root"]), ("4", beacon.block_root(HASHES["3"])))
        self.assertEqual(body["data"]["root"], beacon.block_root(HASHES["4"]))
        self.assertEqual(self.get("/eth/v1/beacon/headers/head")[1]["data"]["header"]["message"]["slot"], "5")
        self.assertEqual(self.get("/eth/v1/beacon/headers")[1]["data"][0]["header"]["message"]["slot"], "5")

    def test_sidecars_of_a_slot_in_order_with_commitments_and_proofs(self):
        self.blobs.put(4, BUNDLE)
        status, body = self.get("/eth/v1/beacon/blob_sidecars/4?indices=0,1")
        self.assertEqual(status, 200)
        self.assertEqual([(s["index"], s["blob"], s["kzg_commitment"], s["kzg_proof"]) for s in body["data"]],
                         [("0", BUNDLE["blobs"][0], BUNDLE["commitments"][0], BUNDLE["proofs"][0]),
                          ("1", BUNDLE["blobs"][1], BUNDLE["commitments"][1], BUNDLE["proofs"][1])])
        self.assertEqual(self.get("/eth/v1/beacon/blob_sidecars/3")[1]["data"], [])  # a slot without blobs

    def test_unknown_blocks_are_404_and_other_paths_none(self):
        for block_id in ("6", "0x" + "ee" * 32, "nonsense"):
            self.assertEqual(self.get(f"/eth/v1/beacon/blob_sidecars/{block_id}")[0], 404, block_id)
        self.assertIsNone(self.get("/eth/v1/node/version"))
        self.assertIsNone(self.get("/status"))

    def test_old_slots_are_pruned(self):
        self.blobs.put(1, BUNDLE)
        self.blobs.put(1 + beacon.KEEP_SLOTS + 1, BUNDLE)
        self.assertEqual(self.blobs.get(1), [])
        self.assertEqual(len(self.blobs.get(1 + beacon.KEEP_SLOTS + 1)), 2)


if __name__ == "__main__":
    unittest.main()
