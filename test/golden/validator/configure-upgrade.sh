#!/bin/sh
# nodefleet: configure 0G validator validator-1 on host h-validator: the host tools, the settings the
# switch reads, the staged unit files and default config files; then zg-validator.py setup
# installs and starts 0gchaind and the execution client (or, while a switch is configured,
# leaves the units to the switch steps). Safe to run again.
set -eu
changed=""

# put PATH MODE OWNER < content: replace PATH only when the content differs (its mode and owner
# are set either way). The content is staged in a file of this call's own beside PATH (several
# steps of a host run at once and put the same shared tools), then renamed over it: a reader sees
# the old file or the new one, and two writers never write into one staging file.
put() {
	tmp="$(mktemp "$1.nodefleet-new.XXXXXX")"
	cat > "$tmp"
	chmod "$2" "$tmp"
	chown "$3" "$tmp"
	if cmp -s "$tmp" "$1"; then
		rm -f "$tmp"
		chmod "$2" "$1"
		chown "$3" "$1"
	else
		mv "$tmp" "$1"
		changed="$changed $1"
	fi
	record_file "$1"
}

# put_tool PATH MODE OWNER DIGEST: put PATH from the host tools nodefleet copied to the SSH user's
# ~/.nodefleet/tools (components/hosts/tools.ts, HOST_TOOLS_DIR), from the file named by DIGEST,
# its sha256 checked first.
put_tool() {
	tool="$(getent passwd "${SUDO_USER:-root}" | cut -d: -f6)/.nodefleet/tools/$4"
	if [ ! -f "$tool" ] || [ "$(sha256sum < "$tool" | cut -c1-64)" != "$4" ]; then
		echo "nodefleet: $tool (for $1) is missing or altered on this host: the host's tools step copies it (pulumi up --replace on its urn, the one ending in -tools)" >&2
		exit 1
	fi
	put "$1" "$2" "$3" < "$tool"
}

# The drift record of this step (read by `pulumi refresh` through nodefleet's drift check): what it
# put on the host, as digests, modes, owners and wanted unit states, never contents. Written anew
# each run, so it holds what the last run applied.
record=/var/lib/nodefleet/drift/validator-1.configure
rm -rf "$record"
install -d -m 0700 "$record"
# record_file PATH: its sha256, mode and owner as this step left them.
record_file() {
	printf 'file\t%s\t%s\t%s\n' "$1" "$(sha256sum "$1" | cut -c1-64)" "$(stat -c '%a %U:%G' "$1")" > "$record/f.$(printf '%s' "$1" | sha256sum | cut -c1-16)"
}
# record_unit NAME: the unit is meant to be enabled and running.
record_unit() {
	printf 'unit\t%s\n' "$1" > "$record/u.$1"
}

install -d -m 0755 /usr/local/lib/nodefleet /usr/local/lib/nodefleet/zgvalidator /etc/nodefleet/validator-1
put_tool /usr/local/lib/nodefleet/nodefleet_rpc.py 0644 root:root dfbd3424c12748dd5512adf6c44dae190fbf53028a8001971bdea7e5373a008c
put_tool /usr/local/lib/nodefleet/nodefleet_faults.py 0644 root:root a20fc3ff0ff8143ed1cf62137a3654c97ec6981dad5c2b8e8757bdbad57fa453
put_tool /usr/local/lib/nodefleet/faults.json 0644 root:root 34ee96112e36b1c0c58c54f8f89d282cdfc69a777cf37521b7179216cba0f50a
put_tool /usr/local/lib/nodefleet/nodefleet_health.py 0644 root:root a0a2d7cb99f58736bdaf6c3476fb4479d3ad316843fa6785e9317e8582607825
put_tool /usr/local/lib/nodefleet/trim_export.py 0755 root:root da803f98fd3db51ed810b58082cd2ef3390f5a76d0582b1ae8a197aa44e51f15
put_tool /usr/local/lib/nodefleet/set-rpc-dial-url.py 0755 root:root ff628e940d304dcf6300b585290226cde74619df8ad6cd565e72230a3c0cd3f2
put_tool /usr/local/lib/nodefleet/consensus-height-rollback.py 0755 root:root 1a59a7581cc1a0a98a3071b5decf65fdd33e51eeeb7f4da7499d47f277f39156
put_tool /usr/local/lib/nodefleet/consensus-stop.py 0755 root:root 5c333fa033cefab547b7f054faec291fc2d5c1c668c7a16ee580f2c9b68d3ab4
put_tool /usr/local/lib/nodefleet/zg-validator.py 0755 root:root 407ecb4e96e06afb94ee16bb4c28a442e0a41bef3094087feb10dd43db0e60bf
put_tool /usr/local/lib/nodefleet/zgvalidator/__init__.py 0644 root:root 6f7e88294c2489d1e562fdd3843ff3b304f2e60a68700cac9a241fa0656dd646
put_tool /usr/local/lib/nodefleet/zgvalidator/chain.py 0644 root:root cda07bca7f71e9cc4d4fdb1747f1855d2e54fb88299328245ab18ac9c23661b1
put_tool /usr/local/lib/nodefleet/zgvalidator/cli.py 0644 root:root 017b51e1ba6c2710dbf72ed1e298721fa74936242c508e06ba43122eadfc0085
put_tool /usr/local/lib/nodefleet/zgvalidator/comet.py 0644 root:root 4512d26f0ba0adb8267b5a83ba2378e0d4b70a88dee97236db4bb1d9f1cf5f41
put_tool /usr/local/lib/nodefleet/zgvalidator/exporting.py 0644 root:root e4cd38c2965033b2ff9ec764608decfeb9c1401a2a911b72fcb5c83deb3b9cac
put_tool /usr/local/lib/nodefleet/zgvalidator/handover.py 0644 root:root 05abcd4d879ae585d232e7e596f0a185c1bfbcc2bc9a7269df62ec2af1631c74
put_tool /usr/local/lib/nodefleet/zgvalidator/health.py 0644 root:root a597263d231e818406fbfe123e63c285df02ed2c287599b6de19a3c3b6b3b085
put_tool /usr/local/lib/nodefleet/zgvalidator/host.py 0644 root:root 70b31a7305f14d6c022c3056bfa86e162e4050626ee9401a2651f9e5427496ae
put_tool /usr/local/lib/nodefleet/zgvalidator/importing.py 0644 root:root 0c3d18bfe72f6da7df089cd2029b5b07b3353ccf0a1674ecdf7b7b686b370ac1
put_tool /usr/local/lib/nodefleet/zgvalidator/jobs.py 0644 root:root cb48fcfe1fea619eea7728ad1f48ee950aff57d97dce07a80b358a8f6dc7434b
put_tool /usr/local/lib/nodefleet/zgvalidator/lock.py 0644 root:root 57aa669020fa75a47aaa3028532f26ed8eeae8d636ba1de50fe588c1bcf77fde
put_tool /usr/local/lib/nodefleet/zgvalidator/lowdowntime.py 0644 root:root 80949682a3dc98630f9d6806c80fbb20267afbe5879ee85431387c5dd29ca63c
put_tool /usr/local/lib/nodefleet/zgvalidator/node.py 0644 root:root 6b522ac7c860152d072202aa4548b6690a5de1a812ae554776b349d0b25dcb54
put_tool /usr/local/lib/nodefleet/zgvalidator/rollback.py 0644 root:root d5480e0d549e9fdc1dcd16cd1c812c2c7fb99739a24375cc3af19b49b9d32b30
put_tool /usr/local/lib/nodefleet/zgvalidator/setup.py 0644 root:root 76f5bb60d5c888beddf4be6c3da01d1594af99bc89f8f46f27b1b79ee3a10a87
put_tool /usr/local/lib/nodefleet/zgvalidator/stall.py 0644 root:root 248c973baf057fc31cde8d021d11280519305ceeb0a667f82721ff7511b2865f
put_tool /usr/local/lib/nodefleet/zgvalidator/starting.py 0644 root:root 0c41eedac0e446b789e138f7da12dc302de0677728b51d96f8dec5da01eff6f8
put_tool /usr/local/lib/nodefleet/zgvalidator/steps.json 0644 root:root a7230d7652f2939e97e25101acf7ccf8b2224ec2560022e28a5c500a2ba2c57c
put_tool /usr/local/lib/nodefleet/zgvalidator/switch.py 0644 root:root c5cd2ff2b49092a0a9d733aabedf50505858d4eb83b803313c65a9c8d54ac1ac
put_tool /usr/local/lib/nodefleet/zgvalidator/upgrade.py 0644 root:root 3a46cfda7f002ec6cc3685ba0438da3965f497fb47319a2e5a50fbc50dbeda3d
put /etc/nodefleet/validator-1/validator.json 0644 root:root <<'NODEFLEET_EOF'
{
  "node": "validator-1",
  "operator": "nodefleet",
  "dataRoot": "/data/validator-1",
  "gethDir": "/data/validator-1/geth",
  "rethDir": "/data/validator-1/reth",
  "consensusHome": "/data/validator-1/0gchaind",
  "jwt": "/data/validator-1/jwt.hex",
  "etcDir": "/etc/nodefleet/validator-1",
  "releaseDir": "/opt/nodefleet/0g-chain",
  "genesis": "/opt/nodefleet/0g-chain/geth-genesis.json",
  "consensus": {
    "daemon": "0gchaind",
    "flagPrefix": "chaincfg"
  },
  "consensusGenesis": null,
  "rethBinary": "/usr/local/bin/reth",
  "services": {
    "geth": "geth-validator-1.service",
    "reth": "reth-validator-1.service",
    "consensus": "0gchaind-validator-1.service"
  },
  "ports": {
    "http": 56545,
    "ws": 56546,
    "engine": 56551,
    "p2p": 56303,
    "cometRpc": 56657
  },
  "dialUrl": "http://localhost:56551",
  "executionClient": "geth",
  "switch": null,
  "urlsFile": "/etc/nodefleet/validator-1/urls.json",
  "heightTolerance": 5,
  "importRetries": 5,
  "remedyRetries": 3,
  "rollbackMax": 64,
  "verifyTimeout": 180,
  "cleanupAfterHours": 24,
  "cleanup": {
    "removeGethBinary": false,
    "removeBackup": false
  },
  "carriedSigningState": null,
  "driftUnits": "/var/lib/nodefleet/drift/validator-1.configure+units",
  "upgrade": {
    "release": "0g-chain-next",
    "height": 1200,
    "units": "/etc/nodefleet/validator-1/upgrade",
    "releaseDir": "/opt/nodefleet/releases/0g-chain-next-070707070707070707070707"
  }
}
NODEFLEET_EOF
put /etc/nodefleet/validator-1/app.toml 0644 root:root <<'NODEFLEET_EOF'
# app.toml of 0G validator validator-1 (0gchaind): written by nodefleet only when the consensus
# home has none. nodefleet later changes only the rpc-dial-url line (docs/spec.md §4.5 step 12).

# The application's base settings, as `beacond init` writes them but for pruning: BeaconKit's
# rollback reads them from this file alone ("unknown pruning strategy" without one), and a height
# rollback needs the states it goes back to (init's "everything" keeps two).
pruning = "default"
pruning-keep-recent = "0"
pruning-interval = "0"
halt-height = 0
halt-time = 0
min-retain-blocks = 0
inter-block-cache = true
iavl-cache-size = 2500
iavl-disable-fastnode = true

[telemetry]
service-name = ""
enabled = true
enable-hostname = false
enable-hostname-label = false
enable-service-label = false
prometheus-retention-time = 0
global-labels = []
metrics-sink = ""
statsd-addr = ""
datadog-hostname = ""

[beacon-kit.engine]
# The execution client's engine API (authrpc), on this host only.
rpc-dial-url = "http://localhost:56551"
# The one JWT secret file the execution client reads too (docs/spec.md §5).
jwt-secret-path = "/data/validator-1/jwt.hex"
# The rest of the beacon-kit tables are BeaconKit v1.1.0's defaults as `beacond init` writes them:
# the daemon reads them without defaults of its own, so a key left out is zero (a payload builder left
# out is off, and a validator without it never proposes: "failed to prepare proposal … payload
# builder is disabled").
rpc-retries = "3"
rpc-timeout = "900ms"
rpc-startup-check-interval = "3s"
rpc-jwt-refresh-interval = "30s"

[beacon-kit.logger]
time-format = "RFC3339"
log-level = "info"
style = "pretty"

[beacon-kit.kzg]
# The trusted setup the release ships. The unit passes it as a flag too; `rollback` builds the
# node from this file's settings alone.
trusted-setup-path = "/opt/nodefleet/0g-chain/kzg-trusted-setup.json"
implementation = "crate-crypto/go-kzg-4844"

[beacon-kit.payload-builder]
# The local payload builder: the blocks this validator proposes are built by its execution client.
enabled = true
suggested-fee-recipient = "0x0000000000000000000000000000000000000000"
payload-timeout = "850ms"

[beacon-kit.validator]
graffiti = ""
enable-optimistic-payload-builds = "true"

[beacon-kit.block-store-service]
enabled = "false"
availability-window = "8192"

[beacon-kit.node-api]
# Off: nodefleet opens no port for it.
enabled = "false"
address = "127.0.0.1:3500"
logging = "false"
NODEFLEET_EOF
put /etc/nodefleet/validator-1/config.toml 0644 root:root <<'NODEFLEET_EOF'
# config.toml of 0G validator validator-1: written by nodefleet only when the consensus home has none.
# CometBFT's file paths, relative to the home: BeaconKit leaves a path missing here empty (its
# first start then reads the home directory as the genesis file) instead of taking the default.
genesis_file = "config/genesis.json"
priv_validator_key_file = "config/priv_validator_key.json"
priv_validator_state_file = "data/priv_validator_state.json"
node_key_file = "config/node_key.json"

[rpc]
# CometBFT RPC (GET /status): this host only.
laddr = "tcp://127.0.0.1:56657"

[p2p]
laddr = "tcp://0.0.0.0:56656"
NODEFLEET_EOF
put /etc/nodefleet/validator-1/0gchaind-validator-1.service 0644 root:root <<'NODEFLEET_EOF'
# 0gchaind, the consensus daemon of 0G validator validator-1, rendered by nodefleet. The JWT path is
# the one file the execution client's --authrpc.jwtsecret names (docs/spec.md §5); its engine URL is
# rpc-dial-url in app.toml (docs/spec.md §4.5 step 12). Its stop waits, a few seconds at most, while a
# peer still needs its last precommit (docs/roles.md, "Its stop").
[Unit]
Description=0gchaind consensus daemon of validator-1
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=nodefleet
Group=nodefleet
WorkingDirectory=/data/validator-1
ExecStart=/opt/nodefleet/releases/0g-chain-060606060606060606060606/bin/0gchaind start --home /data/validator-1/0gchaind --chaincfg.engine.jwt-secret-path /data/validator-1/jwt.hex --chaincfg.kzg.trusted-setup-path /opt/nodefleet/0g-chain/kzg-trusted-setup.json
ExecStop=-/usr/bin/python3 -S /usr/local/lib/nodefleet/consensus-stop.py --rpc http://127.0.0.1:56657 --within 10
Restart=always
RestartSec=3
LimitNOFILE=65535

[Install]
WantedBy=multi-user.target
NODEFLEET_EOF
put /etc/nodefleet/validator-1/geth-validator-1.service 0644 root:root <<'NODEFLEET_EOF'
# geth, the execution client of 0G validator validator-1 before the switch to reth (and after a
# rollback), rendered by nodefleet with the same ports, JWT file and bind addresses as reth.
[Unit]
Description=geth execution client of validator-1
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=nodefleet
Group=nodefleet
WorkingDirectory=/data/validator-1
ExecStart=/opt/nodefleet/releases/0g-chain-060606060606060606060606/bin/geth --datadir /data/validator-1/geth --networkid 16661 --syncmode full --http --http.addr 127.0.0.1 --http.port 56545 --http.api eth,net,web3 --ws --ws.addr 127.0.0.1 --ws.port 56546 --authrpc.addr 127.0.0.1 --authrpc.port 56551 --authrpc.jwtsecret /data/validator-1/jwt.hex --port 56303 --bootnodes enode://79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8@203.0.113.7:30303 --nat extip:198.51.100.30
Restart=always
RestartSec=3
LimitNOFILE=65535

[Install]
WantedBy=multi-user.target
NODEFLEET_EOF
put /etc/nodefleet/validator-1/reth-validator-1.service 0644 root:root <<'NODEFLEET_EOF'
# reth, the execution client of 0G validator validator-1, rendered by nodefleet (docs/spec.md §2.6).
# The journal is its log: --color never (reth colours its output by default, also into the journal)
# and --log.file.max-files 0 (by default it also writes up to 5 x 200 MB of debug log files under
# the operator's home).
[Unit]
Description=reth execution client of validator-1
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=nodefleet
Group=nodefleet
WorkingDirectory=/data/validator-1
ExecStart=/usr/local/bin/reth node --chain /opt/nodefleet/0g-chain/geth-genesis.json --datadir /data/validator-1/reth --ipcpath /data/validator-1/reth/reth.ipc --http --http.addr 127.0.0.1 --http.port 56545 --http.api eth,net,admin --ws --ws.addr 127.0.0.1 --ws.port 56546 --authrpc.addr 127.0.0.1 --authrpc.port 56551 --authrpc.jwtsecret /data/validator-1/jwt.hex --engine.persistence-threshold 0 --engine.memory-block-buffer-target 0 --port 56303 --bootnodes enode://79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8@203.0.113.7:30303 --nat extip:198.51.100.30 --color never --log.file.max-files 0
Restart=always
RestartSec=3
LimitNOFILE=65535

[Install]
WantedBy=multi-user.target
NODEFLEET_EOF
# An upgrade at a height: the new release's units and the watcher that swaps to them there.
install -d -m 0755 /etc/nodefleet/validator-1/upgrade
put /etc/nodefleet/validator-1/upgrade/0gchaind-validator-1.service 0644 root:root <<'NODEFLEET_EOF'
# 0gchaind, the consensus daemon of 0G validator validator-1, rendered by nodefleet. The JWT path is
# the one file the execution client's --authrpc.jwtsecret names (docs/spec.md §5); its engine URL is
# rpc-dial-url in app.toml (docs/spec.md §4.5 step 12). Its stop waits, a few seconds at most, while a
# peer still needs its last precommit (docs/roles.md, "Its stop").
[Unit]
Description=0gchaind consensus daemon of validator-1
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=nodefleet
Group=nodefleet
WorkingDirectory=/data/validator-1
ExecStart=/opt/nodefleet/releases/0g-chain-next-070707070707070707070707/bin/0gchaind start --home /data/validator-1/0gchaind --chaincfg.engine.jwt-secret-path /data/validator-1/jwt.hex --chaincfg.kzg.trusted-setup-path /opt/nodefleet/0g-chain-next/kzg-trusted-setup.json
ExecStop=-/usr/bin/python3 -S /usr/local/lib/nodefleet/consensus-stop.py --rpc http://127.0.0.1:56657 --within 10
Restart=always
RestartSec=3
LimitNOFILE=65535

[Install]
WantedBy=multi-user.target
NODEFLEET_EOF
put /etc/nodefleet/validator-1/upgrade/geth-validator-1.service 0644 root:root <<'NODEFLEET_EOF'
# geth, the execution client of 0G validator validator-1 before the switch to reth (and after a
# rollback), rendered by nodefleet with the same ports, JWT file and bind addresses as reth.
[Unit]
Description=geth execution client of validator-1
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=nodefleet
Group=nodefleet
WorkingDirectory=/data/validator-1
ExecStart=/opt/nodefleet/releases/0g-chain-next-070707070707070707070707/bin/geth --datadir /data/validator-1/geth --networkid 16661 --syncmode full --http --http.addr 127.0.0.1 --http.port 56545 --http.api eth,net,web3 --ws --ws.addr 127.0.0.1 --ws.port 56546 --authrpc.addr 127.0.0.1 --authrpc.port 56551 --authrpc.jwtsecret /data/validator-1/jwt.hex --port 56303 --bootnodes enode://79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8@203.0.113.7:30303 --nat extip:198.51.100.30
Restart=always
RestartSec=3
LimitNOFILE=65535

[Install]
WantedBy=multi-user.target
NODEFLEET_EOF
put /etc/nodefleet/validator-1/upgrade/reth-validator-1.service 0644 root:root <<'NODEFLEET_EOF'
# reth, the execution client of 0G validator validator-1, rendered by nodefleet (docs/spec.md §2.6).
# The journal is its log: --color never (reth colours its output by default, also into the journal)
# and --log.file.max-files 0 (by default it also writes up to 5 x 200 MB of debug log files under
# the operator's home).
[Unit]
Description=reth execution client of validator-1
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=nodefleet
Group=nodefleet
WorkingDirectory=/data/validator-1
ExecStart=/usr/local/bin/reth node --chain /opt/nodefleet/0g-chain-next/geth-genesis.json --datadir /data/validator-1/reth --ipcpath /data/validator-1/reth/reth.ipc --http --http.addr 127.0.0.1 --http.port 56545 --http.api eth,net,admin --ws --ws.addr 127.0.0.1 --ws.port 56546 --authrpc.addr 127.0.0.1 --authrpc.port 56551 --authrpc.jwtsecret /data/validator-1/jwt.hex --engine.persistence-threshold 0 --engine.memory-block-buffer-target 0 --port 56303 --bootnodes enode://79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8@203.0.113.7:30303 --nat extip:198.51.100.30 --color never --log.file.max-files 0
Restart=always
RestartSec=3
LimitNOFILE=65535

[Install]
WantedBy=multi-user.target
NODEFLEET_EOF
put /etc/nodefleet/validator-1/nodefleet-upgrade-validator-1.service 0644 root:root <<'NODEFLEET_EOF'
# The upgrade of 0G validator validator-1 at height 1200 to release 0g-chain-next: waits
# for the consensus daemon to commit that height, then starts the execution client and the daemon on
# the new release (zg-validator.py upgrade-watch; docs/rollouts.md). Rendered by nodefleet.
[Unit]
Description=nodefleet upgrade of validator validator-1 at height 1200
After=network-online.target 0gchaind-validator-1.service

[Service]
Type=simple
ExecStart=/usr/bin/python3 -S /usr/local/lib/nodefleet/zg-validator.py /etc/nodefleet/validator-1/validator.json upgrade-watch
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
NODEFLEET_EOF
exec python3 -S /usr/local/lib/nodefleet/zg-validator.py /etc/nodefleet/validator-1/validator.json setup
