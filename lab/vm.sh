#!/usr/bin/env bash
# The lab's hosts for the dev stack and the e2e tier: Debian bookworm system containers
# (systemd-nspawn) with systemd as PID 1, sshd, nftables and a /data filesystem of their own, at the
# runner's native speed. nodefleet reaches them over SSH as it reaches any existing server.
#
#   lab/vm.sh image             build the root filesystem once (debootstrap; cached outside the clone)
#   lab/vm.sh image-dir         the same, then prints its folder
#   lab/vm.sh up [N]            boot hosts dev-1..dev-N (default 2) and wait until ready
#   lab/vm.sh boot-cloud dev-N USER-DATA [USER]
#                               boot dev-N afresh as a cloud server boots: Debian's cloud-init with a
#                               NoCloud seed of USER-DATA (a file) and the lab's key as the
#                               datasource's public key; no host key of the lab's; ready once USER
#                               (default admin) answers over SSH
#   lab/vm.sh start dev-N...    boot these hosts (their disks as they are) and wait until ready
#   lab/vm.sh stop dev-N        shut one host down (its disks kept)
#   lab/vm.sh down              shut them down cleanly (systemd powers off inside; killed after 60 s)
#   lab/vm.sh status            one line per host: running/stopped, SSH address, lab address
#   lab/vm.sh ssh dev-1 [CMD]   a root shell (or one command) on a host
#   lab/vm.sh logs dev-1 UNIT   follow a unit's journal on a host
#   lab/vm.sh wipe              down, then delete the hosts' disks (chain data too)
#   lab/vm.sh lab CMD...        run CMD from the lab network's runner address (10.77.0.1)
#   lab/vm.sh forward dev-1 L R  forward 127.0.0.1:L here to the host's 127.0.0.1:R until killed
#
# Each host has two NICs. "nat" (10.0.2.1N/24 on a bridge of the runner's, the runner at 10.0.2.2):
# how nodefleet reaches its SSH, and how the host reaches the runner's lab services (artifact
# server, dev chain), which listen on the runner's loopback: the runner rewrites what a host sends
# to 10.0.2.2 to 127.0.0.1 (a nat rule of the lab's own table, on that bridge alone). Hosts cannot
# reach each other there (isolated bridge ports). "lab" (10.77.0.1N/24 on a bridge inside a network
# namespace made for this checkout, the runner's probe address 10.77.0.1): the network the e2e
# tests probe the firewall from, and the one the hosts talk to each other on. What a container
# cannot do as a server does (set the clock, load kernel modules, own its kernel) is listed in
# docs/development.md, "The lab's hosts". The SSH key is made per checkout (.state/vm/id_ed25519).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lab/lib/apt.sh
source "$ROOT/lab/lib/apt.sh"
CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}/hosts"
# The hosts' disks and runtime files: the dev stack's under .state/vm; the test command's e2e tier
# gives its own (NODEFLEET_STATE=.state/e2e), so tests never touch the dev stack's hosts. The SSH key
# is one per checkout (the dev config names it) wherever the disks are.
STATE="${NODEFLEET_STATE:-$ROOT/.state}/vm"
KEY="$ROOT/.state/vm/id_ed25519"
LAB_NET=10.77.0
NAT_NET=10.0.2
# The data filesystem: sparse, so the 1 TB a node's hardware check asks for costs the runner only
# what is written (fallocate inside allocates in the image's own filesystem, not on the runner's).
DATA_DISK="${NODEFLEET_VM_DATA_DISK:-1T}"
# A CPU cap per host, from outside (a container's own CPUQuota= is accepted and not enforced):
# percent of one core; empty for none.
CPU_PERCENT="${NODEFLEET_HOST_CPU_PERCENT-}"
# A host's weight among the lab's hosts (cgroup v1 cpu.shares; 1024, a nice-0 task's, when empty):
# the e2e lane gives the workflows' runner host less, so that it takes the CPU the other hosts'
# scenarios leave idle (scripts/lib/e2e-lane.sh).
CPU_SHARES="${NODEFLEET_HOST_CPU_SHARES-}"
# The monitoring packages are in the image, their services disabled (nodefleet's monitoring steps
# enable them). No kernel: the runner's is every host's.
PACKAGES=systemd,systemd-sysv,dbus,openssh-server,openssh-sftp-server,nftables,python3,curl,ca-certificates,iproute2,chrony,procps,sudo,netcat-openbsd,python3-pycryptodome,prometheus-node-exporter,prometheus,prometheus-alertmanager,e2fsprogs,util-linux
# Debian's cloud-init, installed by apt into the root after debootstrap (whose own dependency
# resolution fails on its Python dependencies): disabled (/etc/cloud/cloud-init.disabled) but on a
# host booted with `boot-cloud`, which seeds it as a cloud's metadata service would.
LATE_PACKAGES="cloud-init"
CHECKOUT_ID="$(printf '%s' "$ROOT" | sha256sum | cut -c1-8)"
LAB_NS="nflab-$CHECKOUT_ID"
# The nat network's addresses are the same for every checkout (the dev config names them), so its
# bridge and nft table are one per machine: a checkout whose hosts were left behind (a session
# ended, a run killed) leaves them to the next, which takes them over instead of adding a second
# 10.0.2.2/24.
NAT_BR="nflab-nat"
NFT_TABLE="nodefleet_lab"
CGROUP="nodefleet-lab-$CHECKOUT_ID"
# Bump when the image recipe in cmd_image changes (the package list and lab/guest/ count already).
IMAGE_RECIPE=6

say() { printf '[vm] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

need() {
    local missing=() tool
    for tool in "$@"; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
    [ ${#missing[@]} -eq 0 ] && return
    [ "$(id -u)" -eq 0 ] || die "missing ${missing[*]}: install systemd-container debootstrap"
    say "installing systemd-nspawn and debootstrap from Debian's packages"
    apt_install systemd-container debootstrap
}

# The hosts' root filesystem: image_dir, cmd_image (debootstrap once, cached).
# shellcheck source=lab/lib/image.sh
source "$ROOT/lab/lib/image.sh"

vm_names() {
    local n="$1" i
    for i in $(seq 1 "$n"); do echo "dev-$i"; done
}

existing_vms() {
    local d
    for d in "$STATE"/dev-*/; do [ -d "$d" ] && basename "$d"; done
    return 0
}

index_of() { echo "${1#dev-}"; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { local p="$STATE/$1/supervisor.pid"; [ -f "$p" ] && alive "$(cat "$p")" && cat "$p"; }
nspawn_pid() { local p="$STATE/$1/nspawn.pid"; [ -f "$p" ] && alive "$(cat "$p")" && cat "$p"; }
nat_ip() { echo "$NAT_NET.$((10 + $(index_of "$1")))"; }
lab_ip() { echo "$LAB_NET.$((10 + $(index_of "$1")))"; }
nat_mac() { printf '52:54:00:12:34:%02x' "$(index_of "$1")"; }
veth_of() { echo "nf${CHECKOUT_ID}v$(index_of "$1")"; } # the runner's end of a host's nat NIC

login_of() { cat "$STATE/$1/login" 2>/dev/null || echo root; } # a cloud host's login user (boot-cloud)
ssh_vm() {
    local vm="$1"; shift
    ssh -i "$KEY" -o BatchMode=yes -o StrictHostKeyChecking=no \
        -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout="${SSH_CONNECT_TIMEOUT:-5}" "${SSH_EXTRA[@]}" "$(login_of "$vm")@$(nat_ip "$vm")" "$@"
}
SSH_EXTRA=()

# One command on a host for a caller that needs it to run (the E2E tests, an operator). A host that
# is rebooting refuses connections for a second or two, so a connection that fails before the
# session opens is tried again (up to 5 times): ssh has then neither run the command nor read
# stdin. Any other failure, the command's own exit status included, is passed through at once.
ssh_run() {
    local vm="$1" err rc try; shift
    err="$(mktemp)"
    for try in 1 2 3 4 5; do
        SSH_CONNECT_TIMEOUT=15 ssh_vm "$vm" "$@" 2>"$err" && rc=0 || rc=$?
        if [ "$rc" -ne 255 ] || [ "$try" -eq 5 ] || [ -z "$(pid_of "$vm")" ] ||
            ! grep -qE 'during banner exchange|kex_exchange_identification|port [0-9]+: (Connection (refused|timed out)|No route to host)' "$err"; then
            break
        fi
        say "ssh to $vm failed before the session opened ($(tail -n1 "$err")); trying again"
        sleep "${NODEFLEET_SSH_RETRY_PAUSE:-3}"
    done
    cat "$err" >&2
    rm -f "$err"
    return "$rc"
}

ensure_key() {
    mkdir -p "$STATE" "$(dirname "$KEY")"
    [ -f "$KEY" ] || ssh-keygen -q -t ed25519 -N '' -C "nodefleet-dev-vm" -f "$KEY"
    chmod 600 "$KEY"
}

# What every host's boot needs first (the lab's key, its network, the nat bridge), made by one
# caller at a time: the e2e lane boots hosts from two test files at once.
ensure_net() {
    mkdir -p "$STATE"
    (
        flock 8
        ensure_key
        ensure_lab
        ensure_nat
    ) 8>"$STATE/.net.lock"
}

ensure_lab() {
    if ! ip netns list | grep -qw "$LAB_NS"; then
        ip netns add "$LAB_NS"
        ip -n "$LAB_NS" link add br0 type bridge
        ip -n "$LAB_NS" addr add "$LAB_NET.1/24" dev br0
        ip -n "$LAB_NS" link set br0 up
        ip -n "$LAB_NS" link set lo up
    fi
}

# The runner's side of the nat network: a bridge at 10.0.2.2 whose traffic to 10.0.2.2 goes to the
# runner's loopback (route_localnet lets the kernel route it there; the nat rule is on this bridge
# alone). Nothing else of the runner's is changed.
ensure_nat() {
    if ! ip link show "$NAT_BR" >/dev/null 2>&1; then
        ip link add "$NAT_BR" type bridge
        ip addr add "$NAT_NET.2/24" dev "$NAT_BR"
        ip link set "$NAT_BR" up
    fi
    sysctl -qw "net.ipv4.conf.$NAT_BR.route_localnet=1"
    if ! nft list table ip "$NFT_TABLE" >/dev/null 2>&1; then
        nft -f - <<EOF
table ip $NFT_TABLE {
    chain prerouting {
        type nat hook prerouting priority dstnat; policy accept;
        iifname "$NAT_BR" ip daddr $NAT_NET.2 dnat to 127.0.0.1
    }
}
EOF
    fi
}

remove_nat() {
    nft delete table ip "$NFT_TABLE" 2>/dev/null || true
    ip link del "$NAT_BR" 2>/dev/null || true
}

# The hosts' cgroups: a group of their own each, a CPU cap, the storage node's spare core.
# shellcheck source=lab/lib/cgroups.sh
source "$ROOT/lab/lib/cgroups.sh"

# Before each boot: the host's disks (its root copied from the image once; its data filesystem
# made once and loop-mounted), its authorized key, host keys, addresses, and its nat NIC.
prepare() { # vm img
    local vm="$1" img="$2" d="$STATE/$1" r
    r="$d/root"
    mkdir -p "$d"
    if [ ! -f "$d/root.ready" ]; then
        rm -rf "$r" && cp -a "$img/rootfs" "$r" && touch "$d/root.ready"
    fi
    if [ ! -f "$d/data.img" ]; then
        truncate -s "$DATA_DISK" "$d/data.img.tmp"
        mkfs.ext4 -q -F -L nodefleet-data -m 0 -E lazy_itable_init=1,lazy_journal_init=1 "$d/data.img.tmp" >/dev/null
        mv "$d/data.img.tmp" "$d/data.img"
    fi
    mkdir -p "$d/data"
    mountpoint -q "$d/data" || mount -o loop "$d/data.img" "$d/data"
    echo "$vm" > "$r/etc/hostname"
    if [ -d "$d/seed" ]; then
        # A cloud server's first boot: cloud-init makes its users and writes its host key from the
        # seed (the lab's key is the datasource's public key); nothing of the lab's is put there.
        install -d -m 0755 "$r/var/lib/cloud/seed/nocloud"
        install -m 0600 "$d/seed/user-data" "$d/seed/meta-data" "$r/var/lib/cloud/seed/nocloud/"
        rm -f "$r/etc/cloud/cloud-init.disabled"
    else
        install -d -m 0700 "$r/root/.ssh"
        install -m 0600 "$KEY.pub" "$r/root/.ssh/authorized_keys"
        [ -f "$r/etc/ssh/ssh_host_ed25519_key" ] || ssh-keygen -q -A -f "$r"
    fi
    cat > "$r/etc/systemd/network/10-nat.network" <<EOF
[Match]
MACAddress=$(nat_mac "$vm")

[Network]
Address=$(nat_ip "$vm")/24
LinkLocalAddressing=no
IPv6AcceptRA=no
EOF
    cat > "$r/etc/systemd/network/20-lab.network" <<EOF
[Match]
Name=host0

[Network]
Address=$(lab_ip "$vm")/24
LinkLocalAddressing=no
IPv6AcceptRA=no
EOF
    ip link del "$(veth_of "$vm")" 2>/dev/null || true
}

# The host's nat NIC, once its network namespace exists: a veth pair whose host end (nat0) is made
# inside it (nspawn's own --network-interface looks the link up in sysfs, which shows the runner's
# links, not the lab namespace's, where nspawn runs), the runner's end on the nat bridge.
attach_nat() { # vm nspawn-pid
    local vm="$1" npid="$2" veth pid="" try
    veth="$(veth_of "$vm")"
    for try in $(seq 1 100); do
        pid="$(container_init "$npid")" && break
        alive "$npid" || return 1
        sleep 0.1
    done
    [ -n "$pid" ] || { say "$vm: the container's init did not appear"; return 1; }
    ip link add "$veth" type veth peer name nat0 address "$(nat_mac "$vm")" netns "$pid"
    ip link set "$veth" master "$NAT_BR"
    bridge link set dev "$veth" isolated on
    ip link set "$veth" up
}
# The runner's PID of the container's init: the process below nspawn in a network namespace other
# than the lab's (nspawn itself and its helper stay in the lab's).
container_init() { # nspawn-pid
    local lab p
    lab="$(readlink "/proc/$1/ns/net" 2>/dev/null)" || return 1
    for p in $(pgrep -P "$1" 2>/dev/null) $(for c in $(pgrep -P "$1" 2>/dev/null); do pgrep -P "$c" 2>/dev/null; done); do
        if [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" != "$lab" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = systemd ]; then echo "$p"; return 0; fi
    done
    return 1
}

# The host's life: boots it, and boots it again after a `systemctl reboot` inside (nspawn exits 133).
cmd_supervise() { # vm img
    local vm="$1" img="$2" d="$STATE/$1" rc spare
    enter_cgroups "$vm"
    spare_loop "$vm" &
    spare=$!
    while :; do
        prepare "$vm" "$img"
        say "$vm: booting"
        nsenter --net="/run/netns/$LAB_NS" systemd-nspawn -q -D "$d/root" -M "$vm" -b \
            --register=no --keep-unit --console=pipe --resolv-conf=off --timezone=off --link-journal=no \
            --network-bridge=br0 --bind="$d/data:/data" </dev/null &
        local npid=$!
        echo "$npid" > "$d/nspawn.pid"
        attach_nat "$vm" "$npid" || say "$vm: its nat NIC could not be attached"
        rc=0
        wait "$npid" || rc=$?
        rm -f "$d/nspawn.pid"
        clean_cgroups "$vm"
        enter_cgroups "$vm"
        if [ "$rc" -eq 133 ]; then say "$vm: rebooted inside: booting it again"; continue; fi
        say "$vm: stopped (nspawn exit status $rc)"
        break
    done
    kill "$spare" 2>/dev/null || true
    wait "$spare" 2>/dev/null || true
    clean_spare "$vm"
    ip link del "$(veth_of "$vm")" 2>/dev/null || true
    umount "$d/data" 2>/dev/null || true
}

start_vm() {
    local vm="$1" img="$2" d="$STATE/$1"
    [ -n "$(pid_of "$vm")" ] && return 0
    mkdir -p "$d"
    setsid bash "$0" _supervise "$vm" "$img" >>"$d/console.log" 2>&1 </dev/null &
    echo $! > "$d/supervisor.pid"
}

wait_ready() {
    local vm="$1" deadline=$((SECONDS + ${NODEFLEET_VM_BOOT_TIMEOUT:-120})) state
    while [ $SECONDS -lt $deadline ]; do
        [ -n "$(pid_of "$vm")" ] || { tail -20 "$STATE/$vm/console.log" >&2; die "$vm: the container exited during boot"; }
        state="$(ssh_vm "$vm" systemctl is-system-running 2>/dev/null || true)"
        case "$state" in
        running | degraded) say "$vm ready ($state) after $((SECONDS - ${2:-0})) s: ssh $(nat_ip "$vm"), lab $(lab_ip "$vm")"; return 0 ;;
        esac
        sleep 1
    done
    tail -20 "$STATE/$vm/console.log" >&2
    die "$vm: not ready after ${NODEFLEET_VM_BOOT_TIMEOUT:-120} s"
}

cmd_up() {
    local n="${1:-2}" img vm t0=$SECONDS
    need systemd-nspawn mkfs.ext4
    img="$(cmd_image)"
    ensure_net
    for vm in $(vm_names "$n"); do start_vm "$vm" "$img"; done
    for vm in $(vm_names "$n"); do wait_ready "$vm" "$t0"; done
}

cmd_start() { # dev-N...: the hosts named, whichever of them exist or not
    local img vm t0=$SECONDS
    for vm in "$@"; do [[ "$vm" =~ ^dev-[0-9]+$ ]] || die "start: a host is named dev-N, not '$vm'"; done
    need systemd-nspawn mkfs.ext4
    # A host new to its state directory copies its root from this image (lab/runner.sh gives its own).
    img="${NODEFLEET_VM_IMAGE:-$(cmd_image)}"
    ensure_net
    for vm in "$@"; do start_vm "$vm" "$img"; done
    for vm in "$@"; do wait_ready "$vm" "$t0"; done
}

# A host booted as a cloud server boots (docs/hosts.md): a fresh root from the image, cloud-init
# seeded through NoCloud with the given user-data and a meta-data that names a new instance and
# gives the lab's key as the datasource's public key (as Hetzner's and EC2's metadata do).
cmd_boot_cloud() { # vm user-data [user]
    local vm="$1" userdata="$2" user="${3:-admin}" img d t0=$SECONDS
    [[ "$vm" =~ ^dev-[0-9]+$ ]] || die "boot-cloud: a host is named dev-N"
    [ -f "$userdata" ] || die "boot-cloud: $userdata: no such file"
    [[ "$user" =~ ^[a-z_][a-z0-9_-]*$ ]] || die "boot-cloud: $user is not a user name"
    need systemd-nspawn mkfs.ext4
    img="$(cmd_image)"
    ensure_net
    d="$STATE/$vm"
    stop_vm "$vm"
    umount "$d/data" 2>/dev/null || true
    rm -rf "$d"
    mkdir -p "$d/seed"
    install -m 0600 "$userdata" "$d/seed/user-data"
    printf 'instance-id: nodefleet-lab-%s-%s\nlocal-hostname: %s\npublic-keys:\n  - %s\n' "$vm" "$(date +%s%N)" "$vm" "$(cat "$KEY.pub")" > "$d/seed/meta-data"
    echo "$user" > "$d/login"
    start_vm "$vm" "$img"
    wait_ready "$vm" "$t0"
}

stop_vm() {
    local vm="$1" pid npid
    pid="$(pid_of "$vm")" || true
    if [ -n "$pid" ]; then
        # SIGTERM to nspawn: the host's systemd powers off as on a shutdown (SIGRTMIN+3 to its init).
        npid="$(nspawn_pid "$vm")" || true
        [ -n "$npid" ] && kill -TERM "$npid" 2>/dev/null
        local deadline=$((SECONDS + 60))
        while alive "$pid" && [ $SECONDS -lt $deadline ]; do sleep 1; done
        if alive "$pid"; then
            say "$vm: no clean power-off within 60 s; killing it"
            npid="$(nspawn_pid "$vm")" || true
            [ -n "$npid" ] && kill -KILL "$npid" 2>/dev/null
            sleep 2
            kill "$pid" 2>/dev/null || true
        else
            say "$vm: powered off"
        fi
    fi
    rm -f "$STATE/$vm/supervisor.pid" "$STATE/$vm/nspawn.pid"
    ip link del "$(veth_of "$vm")" 2>/dev/null || true
    umount "$STATE/$vm/data" 2>/dev/null || true
    clean_cgroups "$vm"
    clean_spare "$vm"
}

cmd_down() {
    local vm
    for vm in $(existing_vms); do stop_vm "$vm"; done
    ip netns del "$LAB_NS" 2>/dev/null || true
    remove_nat
}

cmd_status() {
    local vm pid
    for vm in $(existing_vms); do
        pid="$(pid_of "$vm")" || true
        if [ -n "$pid" ]; then
            echo "$vm running pid=$pid ssh=$(nat_ip "$vm"):22 lab=$(lab_ip "$vm") system=$(ssh_vm "$vm" systemctl is-system-running 2>/dev/null || echo unreachable)"
        else
            echo "$vm stopped"
        fi
    done
}

cmd_wipe() {
    cmd_down
    local vm
    for vm in $(existing_vms); do
        umount "$STATE/$vm/data" 2>/dev/null || true
        rm -rf "${STATE:?}/$vm"
    done
}

case "${1:-}" in
image) cmd_image >/dev/null ;;
image-dir) cmd_image ;;
up) shift; cmd_up "$@" ;;
boot-cloud) shift; [ $# -ge 2 ] || die "usage: vm.sh boot-cloud dev-N USER-DATA [USER]"; cmd_boot_cloud "$@" ;;
start) shift; [ $# -ge 1 ] || die "usage: vm.sh start dev-N..."; cmd_start "$@" ;;
stop) shift; [ $# -eq 1 ] || die "usage: vm.sh stop dev-N"; stop_vm "$1" ;;
down) cmd_down ;;
status) cmd_status ;;
ssh) shift; [ $# -ge 1 ] || die "usage: vm.sh ssh VM [CMD]"; vm="$1"; shift
    if [ $# -eq 0 ]; then ssh_vm "$vm" -t; else ssh_run "$vm" "$@"; fi ;;
logs) shift; [ $# -eq 2 ] || die "usage: vm.sh logs VM UNIT"; ssh_vm "$1" journalctl -f -n 100 -u "$2" ;;
wipe) cmd_wipe ;;
lab) shift; ensure_lab; ip netns exec "$LAB_NS" "$@" ;;
# A loopback-only service of a host (Prometheus's web UI) on this machine's loopback.
forward) shift; [ $# -eq 3 ] || die "usage: vm.sh forward VM LOCAL_PORT REMOTE_PORT"
    [[ "$2$3" =~ ^[0-9]+$ ]] || die "forward: ports are numbers"
    SSH_EXTRA=(-o ExitOnForwardFailure=yes -o ServerAliveInterval=15 -N -L "127.0.0.1:$2:127.0.0.1:$3")
    SSH_CONNECT_TIMEOUT=15 ssh_vm "$1" ;;
_supervise) shift; cmd_supervise "$@" ;;
*) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
