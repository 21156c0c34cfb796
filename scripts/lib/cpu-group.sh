# A CPU group (cgroup) of a quarter of one nice-0 task's weight, for what runs beside the e2e lane's
# hosts: the idle CPU is all its own, a busy lane's is not (nice orders the tasks of one group only;
# docs/development.md, Test tiers). Sourced by scripts/test.sh and scripts/lib/e2e-lane.sh.
# shellcheck shell=bash

low_cpu_group() { # NAME: makes the group and prints its directory; prints nothing where the machine allows none
    local root="" weight="" g
    if [ -d /sys/fs/cgroup/cpu ]; then root=/sys/fs/cgroup/cpu weight="cpu.shares 256" # v1: a nice-0 task weighs 1024
    elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then root=/sys/fs/cgroup weight="cpu.weight 25"; fi # v2: 100
    [ -n "$root" ] || return 0
    g="$root/$1"
    if mkdir -p "$g" 2>/dev/null && echo "${weight#* }" >"$g/${weight%% *}" 2>/dev/null; then
        echo "$g"
    else
        rmdir "$g" 2>/dev/null || true
    fi
}

join_cpu_group() { # DIR PID: PID into the group; fails where it cannot
    [ -n "$1" ] && echo "$2" >"$1/cgroup.procs" 2>/dev/null
}
