#!/usr/bin/env bash
# Local Debian bookworm VMs for the dev stack and the E2E tests: real systemd, sshd and nftables.
#
#   lab/vm.sh image             build the disk image once (cached outside the clone)
#   lab/vm.sh up [N]            boot VMs dev-1..dev-N (default 2) and wait until ready
#   lab/vm.sh down              shut them down cleanly (ACPI power-off, then kill after 60 s)
#   lab/vm.sh status            one line per VM: running/stopped, SSH port, lab address
#   lab/vm.sh ssh dev-1 [CMD]   a root shell (or one command) on a VM
#   lab/vm.sh logs dev-1 UNIT   follow a unit's journal on a VM
#   lab/vm.sh wipe              down, then delete the VMs' disks (chain data too)
#   lab/vm.sh lab CMD...        run CMD from the lab network's runner address (10.77.0.1)
#   lab/vm.sh forward dev-1 L R  forward 127.0.0.1:L here to the VM's 127.0.0.1:R until killed
#
# Each VM has two NICs: qemu user networking with SSH forwarded to 127.0.0.1:220N (how
# nodefleet reaches it; the VM sees the runner as 10.0.2.2), and a tap on a bridge inside a
# network namespace made for this checkout (the "lab" network, 10.77.0.0/24, VM N at
# 10.77.0.1N), from which the E2E tests probe which ports answer. The SSH key is made per
# checkout (.state/vm/id_ed25519) and handed to the VM on the kernel command line.
# TCG emulation (nested KVM fails on these machines); NODEFLEET_VM_ACCEL=kvm to try KVM.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lab/lib/apt.sh
source "$ROOT/lab/lib/apt.sh"
CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}/vm"
# The VMs' disks and runtime files: the dev stack's under .state/vm; the test command's e2e tier
# gives its own (NODEFLEET_STATE=.state/e2e), so tests never touch the dev stack's VMs. The SSH key
# is one per checkout (the dev config names it) wherever the disks are.
STATE="${NODEFLEET_STATE:-$ROOT/.state}/vm"
KEY="$ROOT/.state/vm/id_ed25519"
SSH_BASE_PORT=2200
LAB_NET=10.77.0
# 4 GB: the real reth sizes its cross-block cache at 4096 MB by default and allocates a 2 GiB table of
# it on the first payload (in a 2 GB guest: "memory allocation of 2147483648 bytes failed", abort).
MEMORY_MB="${NODEFLEET_VM_MEMORY_MB:-4096}"
DATA_DISK="${NODEFLEET_VM_DATA_DISK:-1T}"
# The monitoring packages are in the image, their services disabled (nodefleet's monitoring steps
# enable them): apt under TCG would take minutes per VM. The steps install them where they are missing.
PACKAGES=systemd,systemd-sysv,udev,dbus,openssh-server,openssh-sftp-server,nftables,python3,curl,ca-certificates,iproute2,chrony,kmod,procps,sudo,netcat-openbsd,python3-pycryptodome,linux-image-cloud-amd64,prometheus-node-exporter,prometheus,prometheus-alertmanager
CHECKOUT_ID="$(printf '%s' "$ROOT" | sha256sum | cut -c1-8)"
LAB_NS="nflab-$CHECKOUT_ID"
# Bump when the image recipe in cmd_image changes (the package list and lab/guest/ count already).
IMAGE_RECIPE=3

say() { printf '[vm] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

need() {
    local missing=()
    for tool in "$@"; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
    [ ${#missing[@]} -eq 0 ] && return
    [ "$(id -u)" -eq 0 ] || die "missing ${missing[*]}: install qemu-system-x86 qemu-utils debootstrap"
    say "installing qemu and debootstrap from Debian's packages"
    apt_install qemu-system-x86 qemu-utils debootstrap
}

image_dir() {
    local stamp
    stamp="$( (echo "$IMAGE_RECIPE $PACKAGES"; cat "$ROOT"/lab/guest/*) | sha256sum | cut -c1-12)"
    echo "$CACHE/bookworm-$stamp"
}

debian_mirror() {
    # The mirror this machine's apt already uses: the image comes from the same place.
    local m
    m="$(grep -hm1 '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | head -1)"
    [ -n "$m" ] || m="$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)"
    [ -n "$m" ] || die "no Debian mirror configured in /etc/apt: set NODEFLEET_DEBIAN_MIRROR"
    echo "${NODEFLEET_DEBIAN_MIRROR:-$m}"
}

cmd_image() {
    local dir
    dir="$(image_dir)"
    if [ -f "$dir/root.img" ]; then echo "$dir"; return; fi
    need debootstrap mkfs.ext4 qemu-img
    local work
    work="$(mktemp -d "$CACHE.build.XXXXXX" 2>/dev/null || { mkdir -p "$CACHE" && mktemp -d "$CACHE.build.XXXXXX"; })"
    trap 'rm -rf "$work"' RETURN
    say "building the Debian bookworm image (debootstrap, about 2 minutes, once)"
    local t0=$SECONDS
    local log="$work/debootstrap.log" pid rc=0 last=$SECONDS
    debootstrap --variant=minbase --include="$PACKAGES" bookworm "$work/rootfs" "$(debian_mirror)" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do # its progress every 15 s: what it is at, from its own log
        sleep 1
        if [ $((SECONDS - last)) -ge 15 ]; then
            last=$SECONDS
            say "debootstrap, $((SECONDS - t0)) s: $(grep -c '^I: Retrieving' "$log") packages fetched, $(grep -c '^I: Unpacking' "$log") unpacked; $(grep '^I: ' "$log" | tail -1 | cut -c4-)"
        fi
    done
    wait "$pid" || rc=$?
    [ "$rc" -eq 0 ] || { tail -20 "$log" >&2; die "debootstrap failed"; }
    local r="$work/rootfs"
    install -m 0755 "$ROOT/lab/guest/nodefleet-vm-init" "$r/usr/local/sbin/nodefleet-vm-init"
    install -m 0644 "$ROOT/lab/guest/nodefleet-vm-init.service" "$r/etc/systemd/system/"
    install -m 0644 "$ROOT/lab/guest/10-nat.network" "$r/etc/systemd/network/"
    install -D -m 0644 "$ROOT/lab/guest/go-tcg.conf" "$r/etc/systemd/system.conf.d/nodefleet-go-tcg.conf"
    chroot "$r" systemctl enable nodefleet-vm-init.service systemd-networkd.service ssh.service chrony.service >/dev/null 2>&1
    chroot "$r" systemctl mask systemd-networkd-wait-online.service apt-daily.timer apt-daily-upgrade.timer e2scrub_reap.service >/dev/null 2>&1 || true
    chroot "$r" systemctl disable prometheus.service prometheus-alertmanager.service prometheus-node-exporter.service >/dev/null 2>&1
    rm -f "$r"/etc/ssh/ssh_host_*            # each VM makes its own at boot
    : > "$r/etc/machine-id"                  # and its own machine id
    printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\nLABEL=nodefleet-data /data ext4 defaults,nofail 0 2\n' > "$r/etc/fstab"
    mkdir -p "$r/data"
    echo nodefleet-vm > "$r/etc/hostname"
    install -m 0644 "$ROOT/lab/guest/hosts" "$r/etc/hosts" # as every installed Debian has (debootstrap writes none)
    printf 'PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nUseDNS no\n' > "$r/etc/ssh/sshd_config.d/nodefleet-vm.conf"
    chroot "$r" passwd -l root >/dev/null
    rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/*
    mkdir -p "$work/out"
    cp "$(readlink -f "$r/vmlinuz")" "$work/out/vmlinuz"
    cp "$(readlink -f "$r/initrd.img")" "$work/out/initrd.img"
    mkfs.ext4 -q -L nodefleet-root -d "$r" "$work/out/root.img" 4G >/dev/null
    mkdir -p "$CACHE" && rm -rf "$dir" && mv "$work/out" "$dir"
    say "image ready in $((SECONDS - t0)) s: $dir"
    echo "$dir"
}

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
pid_of() { local p="$STATE/$1/qemu.pid"; [ -f "$p" ] && kill -0 "$(cat "$p")" 2>/dev/null && cat "$p"; }
ssh_port() { echo $((SSH_BASE_PORT + $(index_of "$1"))); }
lab_ip() { echo "$LAB_NET.$((10 + $(index_of "$1")))"; }
lab_mac() { printf '52:54:00:77:00:%02x' "$(index_of "$1")"; }
tap_of() { echo "nf${CHECKOUT_ID}t$(index_of "$1")"; }

ssh_vm() {
    local vm="$1"; shift
    ssh -i "$KEY" -p "$(ssh_port "$vm")" -o BatchMode=yes -o StrictHostKeyChecking=no \
        -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout="${SSH_CONNECT_TIMEOUT:-5}" "${SSH_EXTRA[@]}" root@127.0.0.1 "$@"
}
SSH_EXTRA=()

# One command on a VM for a caller that needs it to run (the E2E tests, an operator). An emulated
# guest under load can miss the banner deadline, so a connection that fails before the session
# opens is tried again (up to 5 times, 15 s each): ssh has then neither run the command nor read
# stdin. Any other failure, the command's own exit status included, is passed through at once.
ssh_run() {
    local vm="$1" err rc try; shift
    err="$(mktemp)"
    for try in 1 2 3 4 5; do
        SSH_CONNECT_TIMEOUT=15 ssh_vm "$vm" "$@" 2>"$err" && rc=0 || rc=$?
        if [ "$rc" -ne 255 ] || [ "$try" -eq 5 ] || [ -z "$(pid_of "$vm")" ] ||
            ! grep -qE 'during banner exchange|kex_exchange_identification|port [0-9]+: Connection (refused|timed out)' "$err"; then
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

ensure_lab() {
    if ! ip netns list | grep -qw "$LAB_NS"; then
        ip netns add "$LAB_NS"
        ip -n "$LAB_NS" link add br0 type bridge
        ip -n "$LAB_NS" addr add "$LAB_NET.1/24" dev br0
        ip -n "$LAB_NS" link set br0 up
        ip -n "$LAB_NS" link set lo up
    fi
}

accel() {
    if [ "${NODEFLEET_VM_ACCEL:-tcg}" = kvm ]; then echo "-accel kvm -cpu host"; else echo "-accel tcg,thread=multi -cpu max"; fi
}

start_vm() {
    local vm="$1" img="$2" d="$STATE/$1"
    [ -n "$(pid_of "$vm")" ] && return 0
    mkdir -p "$d"
    [ -f "$d/root.qcow2" ] || qemu-img create -q -f qcow2 -F raw -b "$img/root.img" "$d/root.qcow2"
    if [ ! -f "$d/data.img" ]; then
        truncate -s "$DATA_DISK" "$d/data.img"
        mkfs.ext4 -q -F -L nodefleet-data -m 0 -E lazy_itable_init=1,lazy_journal_init=1 "$d/data.img" >/dev/null
    fi
    local tap
    tap="$(tap_of "$vm")"
    ip link del "$tap" 2>/dev/null || true
    ip -n "$LAB_NS" link del "$tap" 2>/dev/null || true
    ip tuntap add "$tap" mode tap
    local key64
    key64="$(base64 -w0 < "$KEY.pub")"
    # shellcheck disable=SC2046 # accel flags are several words
    qemu-system-x86_64 -name "nodefleet-$vm" $(accel) -smp 2 -m "$MEMORY_MB" \
        -kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
        -append "root=/dev/vda rw console=ttyS0 systemd.hostname=$vm nodefleet.key=$key64 nodefleet.lanmac=$(lab_mac "$vm") nodefleet.lanip=$(lab_ip "$vm")/24" \
        -drive "file=$d/root.qcow2,if=virtio,format=qcow2" \
        -drive "file=$d/data.img,if=virtio,format=raw" \
        -netdev "user,id=nat,hostfwd=tcp:127.0.0.1:$(ssh_port "$vm")-:22" -device virtio-net-pci,netdev=nat,mac=52:54:00:12:34:56 \
        -netdev "tap,id=lab,ifname=$tap,script=no,downscript=no" -device "virtio-net-pci,netdev=lab,mac=$(lab_mac "$vm")" \
        -qmp "unix:$d/qmp.sock,server,nowait" -serial "file:$d/console.log" -display none \
        -daemonize -pidfile "$d/qemu.pid"
    # The tap stays attached to qemu while it moves into the lab namespace.
    ip link set "$tap" netns "$LAB_NS"
    ip -n "$LAB_NS" link set "$tap" master br0
    ip -n "$LAB_NS" link set "$tap" up
}

wait_ready() {
    local vm="$1" deadline=$((SECONDS + ${NODEFLEET_VM_BOOT_TIMEOUT:-300})) state
    while [ $SECONDS -lt $deadline ]; do
        [ -n "$(pid_of "$vm")" ] || { tail -20 "$STATE/$vm/console.log" >&2; die "$vm: qemu exited during boot"; }
        state="$(ssh_vm "$vm" systemctl is-system-running 2>/dev/null || true)"
        case "$state" in
        running | degraded) say "$vm ready ($state) after $((SECONDS - ${2:-0})) s: ssh port $(ssh_port "$vm"), lab $(lab_ip "$vm")"; return 0 ;;
        esac
        sleep 2
    done
    tail -20 "$STATE/$vm/console.log" >&2
    die "$vm: not ready after ${NODEFLEET_VM_BOOT_TIMEOUT:-300} s"
}

cmd_up() {
    local n="${1:-2}" img vm t0=$SECONDS
    need qemu-system-x86_64 qemu-img mkfs.ext4
    ensure_key
    img="$(cmd_image)"
    ensure_lab
    for vm in $(vm_names "$n"); do start_vm "$vm" "$img"; done
    for vm in $(vm_names "$n"); do wait_ready "$vm" "$t0"; done
}

# One QMP command over qemu's control socket (python3: no extra tool on the runner).
qmp() {
    timeout 10 python3 - "$1" "$2" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
json.loads(f.readline())  # greeting
for cmd in ("qmp_capabilities", sys.argv[2]):
    f.write(json.dumps({"execute": cmd}) + "\n"); f.flush()
    while True:
        msg = json.loads(f.readline())
        if "return" in msg: break
        if "error" in msg: sys.exit(msg["error"].get("desc", "QMP error"))
PY
}

stop_vm() {
    local vm="$1" pid
    pid="$(pid_of "$vm")" || true
    if [ -n "$pid" ]; then
        qmp "$STATE/$vm/qmp.sock" system_powerdown || say "$vm: QMP power-off request failed"
        local deadline=$((SECONDS + 60))
        while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 1; done
        if kill -0 "$pid" 2>/dev/null; then
            say "$vm: no clean power-off within 60 s; killing qemu"
            kill "$pid" 2>/dev/null || true
            sleep 1
        else
            say "$vm: powered off"
        fi
    fi
    rm -f "$STATE/$vm/qemu.pid"
    ip -n "$LAB_NS" link del "$(tap_of "$vm")" 2>/dev/null || true
}

cmd_down() {
    local vm
    for vm in $(existing_vms); do stop_vm "$vm"; done
    ip netns del "$LAB_NS" 2>/dev/null || true
}

cmd_status() {
    local vm pid
    for vm in $(existing_vms); do
        pid="$(pid_of "$vm")" || true
        if [ -n "$pid" ]; then
            echo "$vm running pid=$pid ssh=127.0.0.1:$(ssh_port "$vm") lab=$(lab_ip "$vm") system=$(ssh_vm "$vm" systemctl is-system-running 2>/dev/null || echo unreachable)"
        else
            echo "$vm stopped"
        fi
    done
}

cmd_wipe() {
    cmd_down
    rm -rf "$STATE"/dev-*
}

case "${1:-}" in
image) cmd_image >/dev/null ;;
up) shift; cmd_up "$@" ;;
down) cmd_down ;;
status) cmd_status ;;
ssh) shift; [ $# -ge 1 ] || die "usage: vm.sh ssh VM [CMD]"; vm="$1"; shift
    if [ $# -eq 0 ]; then ssh_vm "$vm" -t; else ssh_run "$vm" "$@"; fi ;;
logs) shift; [ $# -eq 2 ] || die "usage: vm.sh logs VM UNIT"; ssh_vm "$1" journalctl -f -n 100 -u "$2" ;;
wipe) cmd_wipe ;;
lab) shift; ensure_lab; ip netns exec "$LAB_NS" "$@" ;;
# A loopback-only service of a VM (Prometheus's web UI) on this machine's loopback.
forward) shift; [ $# -eq 3 ] || die "usage: vm.sh forward VM LOCAL_PORT REMOTE_PORT"
    [[ "$2$3" =~ ^[0-9]+$ ]] || die "forward: ports are numbers"
    SSH_EXTRA=(-o ExitOnForwardFailure=yes -o ServerAliveInterval=15 -N -L "127.0.0.1:$2:127.0.0.1:$3")
    SSH_CONNECT_TIMEOUT=15 ssh_vm "$1" ;;
*) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
