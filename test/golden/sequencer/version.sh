#!/bin/sh
# nodefleet: Aztec sequencer sequencer-1 software version 2.0.2: runs the version manager
# (aztec-up, docs/spec.md §4.4 / 9), which installs the CLI and pulls the node image, and records the
# version. The configure step restarts the node when the recorded version differs from the one
# it last started.
set -eu
if [ ! -x /opt/nodefleet/aztec/bin/aztec-up ]; then
	echo "sequencer sequencer-1: /opt/nodefleet/aztec/bin/aztec-up is missing: the release was not installed" >&2
	exit 1
fi
install -d -m 0700 /etc/nodefleet/sequencer-1
/opt/nodefleet/aztec/bin/aztec-up 2.0.2
printf '%s\n' 2.0.2 > /etc/nodefleet/sequencer-1/version
echo "sequencer sequencer-1: aztec-up 2.0.2 done"
