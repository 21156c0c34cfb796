# shellcheck shell=bash
# shellcheck disable=SC2034 # read by the scripts that source it
# The Pulumi versions nodefleet pins, in one place: lab/toolchain.sh provides them, and the
# pipeline's scripts/ci/install-pulumi.sh installs (and scripts/ci/stack.sh checks) the same ones.
PULUMI_VERSION=v3.248.0
COMMAND_VERSION=1.2.1
HCLOUD_VERSION=1.39.1
HCLOUD_TF_VERSION=1.66.1 # the terraform-provider-hcloud that pulumi-hcloud v1.39.1's go.mod requires
