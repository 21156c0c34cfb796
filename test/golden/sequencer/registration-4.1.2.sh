#!/bin/sh
# nodefleet: validator registration of Aztec sequencer sequencer-1 (docs/spec.md §2.5): skipped when the
# registry's getInfo already shows it; the key is read on the host from a root-only file.
set -eu
# The settings stay on the host (no key in them): the health check reads the registration's state
# on L1 with them.
install -d -m 0700 /etc/nodefleet/sequencer-1
cat > /etc/nodefleet/sequencer-1/registration.json.nodefleet-new <<'NODEFLEET_EOF'
{
  "dialect": "rollup-deposit",
  "runtime": "docker",
  "binary": "/opt/nodefleet/aztec/bin/aztec",
  "image": "aztecprotocol/aztec",
  "versionFile": "/etc/nodefleet/sequencer-1/version",
  "dataDir": "/data/sequencer-1",
  "l1ChainId": 11155111,
  "validatorAddress": "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23",
  "rollupAddress": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
  "registerEnvFile": "/etc/nodefleet/sequencer-1/register.env",
  "argvPreload": "/usr/local/lib/nodefleet/aztec-argv.mjs",
  "args": [
    "add-l1-validator",
    "--l1-chain-id",
    "11155111",
    "--attester",
    "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23",
    "--withdrawer",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
    "--rollup",
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
  ]
}
NODEFLEET_EOF
mv /etc/nodefleet/sequencer-1/registration.json.nodefleet-new /etc/nodefleet/sequencer-1/registration.json
python3 /usr/local/lib/nodefleet/aztec-register.py sequencer-1 < /etc/nodefleet/sequencer-1/registration.json
