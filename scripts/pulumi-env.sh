# shellcheck shell=bash
# Sourced by scripts/setup.sh (the tests, the pipeline's stack jobs, the benchmarks) and by
# scripts/dev.sh: the Pulumi settings every nodefleet run shares.
#
# Pulumi runs at most 4 resource operations per CPU at once unless told otherwise (8 on a 2-core
# runner). nodefleet's steps wait on hosts, not on this machine, and every step that starts or
# ends makes the CLI save the whole state: 8 at a time, the steps of N nodes ran in waves whose
# number grew with N, each wave's save as big as the fleet, and an `up` grew with the square of
# the fleet (scripts/bench.sh engine; docs/development.md). It does not add SSH connections to a
# host: its steps run in chains (one per node, one per release), as before (2 at once on the dev
# VM with two nodes; the e2e tier counts them). Set PULUMI_PARALLEL to choose.
export PULUMI_PARALLEL="${PULUMI_PARALLEL:-1000}"

# The engine makes each resource's steps one resource at a time, and for a resource that exists it
# waits there for the provider's diff. Pulumi's PULUMI_PARALLEL_DIFF runs the diffs beside it (the
# steps and their order are the same): a no-op `up` of 300 nodes 68 -> 58 s (scripts/bench.sh engine,
# docs/gitops.md "Sizing"). Set PULUMI_PARALLEL_DIFF=false to choose otherwise.
export PULUMI_PARALLEL_DIFF="${PULUMI_PARALLEL_DIFF:-true}"
