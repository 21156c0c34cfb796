# The lab's hosts' cgroups (sourced by lab/vm.sh, which sets CGROUP, CPU_PERCENT, CPU_SHARES and ROOT).
# shellcheck shell=bash

# cgroup v1 (this machine: the systemd hierarchy and the cpu controller) or v2: each host's nspawn
# in a group of its own, so that its services are its own and a CPU cap applies to it alone.
cgroup_dirs() { # vm: the host's group in each hierarchy the lab uses
    local vm="$1"
    if [ -d /sys/fs/cgroup/systemd ]; then
        echo "/sys/fs/cgroup/systemd/$CGROUP/$vm"
        [ -d /sys/fs/cgroup/cpu ] && echo "/sys/fs/cgroup/cpu/$CGROUP/$vm"
        [ -d /sys/fs/cgroup/unified ] && echo "/sys/fs/cgroup/unified/$CGROUP/$vm"
    else
        echo "/sys/fs/cgroup/$CGROUP/$vm"
    fi
    return 0
}
# The core a storage host is sized to spare (docs/roles.md: zgs_node's upstream pad task keeps one
# busy for ever): the hosts here share the runner's two cores with each other and the runner, so
# each host's zgs_node processes are moved, from outside, into a group of their own with a share
# below anything else's and a cap (lab/container-limits.json, "spareCore"). cgroup v1 only (this
# machine): there the host's systemd tracks its services in the systemd hierarchy alone, so moving
# a process in the cpu hierarchy leaves its unit as it was; elsewhere nothing is moved.
spare_dir() { [ -d /sys/fs/cgroup/cpu ] && [ -d /sys/fs/cgroup/systemd ] && echo "/sys/fs/cgroup/cpu/$CGROUP-spare/$1"; }
spare_loop() { # vm: every 2 s, the host's zgs_node processes into its spare group (a restart makes new ones)
    local vm="$1" g s p comm shares percent
    s="$(spare_dir "$vm")" || return 0
    read -r shares percent < <(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["spareCore"]; print(c["shares"], c["defaultPercent"])' "$ROOT/lab/container-limits.json")
    percent="${NODEFLEET_ZGS_CPU_PERCENT-$percent}"
    [ -n "$percent" ] || return 0 # empty: the lab moves nothing
    g="/sys/fs/cgroup/cpu/$CGROUP/$vm"
    mkdir -p "$s"
    echo "$shares" > "${s%/*}/cpu.shares"
    echo 100000 > "$s/cpu.cfs_period_us"
    echo $((percent * 1000)) > "$s/cpu.cfs_quota_us"
    while sleep 2 && kill -0 "$$" 2>/dev/null; do # $$: the supervisor; the loop ends with it however it ends
        [ -f "$g/cgroup.procs" ] || continue
        while read -r p; do
            read -r comm < "/proc/$p/comm" 2>/dev/null || continue
            if [ "$comm" = zgs_node ]; then echo "$p" 2>/dev/null > "$s/cgroup.procs" || true; fi
        done < "$g/cgroup.procs"
    done
}
clean_spare() { # vm
    local s
    s="$(spare_dir "$1")" || return 0
    rmdir "$s" 2>/dev/null || true
    rmdir "${s%/*}" 2>/dev/null || true
}
# nspawn leaves its payload/supervisor groups behind when it ends; a next boot into them can fail
# without a word. Deepest first.
clean_cgroups() { # vm
    local g
    while IFS= read -r g; do
        [ -d "$g" ] || continue
        find "$g" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
    done < <(cgroup_dirs "$1")
}
enter_cgroups() { # vm: this shell into the host's groups, the CPU cap set
    local g
    while IFS= read -r g; do
        mkdir -p "$g"
        echo $$ > "$g/cgroup.procs"
        case "$g" in
        /sys/fs/cgroup/cpu/*)
            echo 100000 > "$g/cpu.cfs_period_us"
            echo "${CPU_SHARES:-1024}" > "$g/cpu.shares"
            if [ -n "$CPU_PERCENT" ]; then echo $((CPU_PERCENT * 1000)) > "$g/cpu.cfs_quota_us"; else echo -1 > "$g/cpu.cfs_quota_us"; fi ;;
        esac
    done < <(cgroup_dirs "$1")
}
