# shellcheck shell=bash
# The lab's hosts' root filesystem (sourced by lab/vm.sh, which sets ROOT, CACHE, PACKAGES,
# LATE_PACKAGES, IMAGE_RECIPE and defines say, die and need): Debian bookworm by debootstrap, then
# the late packages by apt in a chroot, built once and cached by what it is made from.

image_dir() {
    local stamp
    stamp="$( (echo "$IMAGE_RECIPE $PACKAGES $LATE_PACKAGES"; cat "$ROOT"/lab/guest/*) | sha256sum | cut -c1-12)"
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
    if [ -f "$dir/ready" ]; then echo "$dir"; return; fi
    need debootstrap systemd-nspawn
    local work
    mkdir -p "$CACHE"
    work="$(mktemp -d "$CACHE/.build.XXXXXX")"
    trap 'rm -rf "$work"' RETURN
    say "building the Debian bookworm root filesystem (debootstrap, about 2 minutes, once)"
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
    say "installing $LATE_PACKAGES into the root filesystem (apt-get in a chroot)"
    mount -t proc proc "$r/proc"
    rc=0
    chroot "$r" env DEBIAN_FRONTEND=noninteractive sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $LATE_PACKAGES" >"$log" 2>&1 || rc=$?
    umount "$r/proc"
    [ "$rc" -eq 0 ] || { tail -20 "$log" >&2; die "apt-get install $LATE_PACKAGES in the root filesystem failed"; }
    chroot "$r" systemctl enable systemd-networkd.service ssh.service >/dev/null 2>&1
    chroot "$r" systemctl mask systemd-networkd-wait-online.service apt-daily.timer apt-daily-upgrade.timer e2scrub_reap.service >/dev/null 2>&1 || true
    chroot "$r" systemctl disable prometheus.service prometheus-alertmanager.service prometheus-node-exporter.service >/dev/null 2>&1
    rm -f "$r"/etc/ssh/ssh_host_*            # each host makes its own at first boot
    : > "$r/etc/machine-id"                  # and its own machine id
    : > "$r/etc/fstab"                       # /data is the lab's bind mount of the host's own filesystem
    mkdir -p "$r/data"
    install -m 0644 "$ROOT/lab/guest/hosts" "$r/etc/hosts" # as every installed Debian has (debootstrap writes none)
    printf 'PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nUseDNS no\n' > "$r/etc/ssh/sshd_config.d/nodefleet-vm.conf"
    chroot "$r" passwd -l root >/dev/null
    # cloud-init acts only on a host booted with `boot-cloud` (which removes the marker); the lab
    # configures the hosts' network itself, and their seed is NoCloud's.
    touch "$r/etc/cloud/cloud-init.disabled"
    # As Debian's cloud images: the host's name in /etc/hosts (sudo resolves it). The root has no
    # locales, which cloud-init's locale module would set up and fail on.
    printf 'datasource_list: [ NoCloud, None ]\nnetwork: {config: disabled}\nmanage_etc_hosts: localhost\nlocale: false\n' > "$r/etc/cloud/cloud.cfg.d/90-nodefleet-lab.cfg"
    rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/*
    rm -rf "$dir" && mv "$work" "$dir" && touch "$dir/ready"
    rm -f "$dir/debootstrap.log"
    say "root filesystem ready in $((SECONDS - t0)) s: $dir"
    echo "$dir"
}

