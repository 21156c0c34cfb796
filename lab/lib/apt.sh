# shellcheck shell=bash
# Debian packages for the tests and the lab, installed by one apt at a time on this machine.
# Sourced by scripts/setup.sh, lab/lib/cargo.sh, lab/vm.sh and lab/aztec.sh.
#
#   apt_install PACKAGE...   apt-get update, then install PACKAGE... (as root, or through sudo -n
#                            for a user with passwordless sudo, as on GitHub's runners)
#   with_apt_lock CMD...     run CMD... holding the same lock (for any other apt-get call)
#
# The test command starts its slow builds side by side, and on a fresh machine several of them
# need packages at once. Two apt-gets at the same time fail on apt's own locks ("Could not get lock
# /var/lib/apt/lists/lock"), and worse: where an image's apt configuration cleans the package cache
# after every update and every dpkg run (Debian's container images: /etc/apt/apt.conf.d/docker-clean),
# one apt-get deletes the .deb files another is unpacking ("dpkg-deb: error: failed to read
# archive"). Both were met in a cold run on a fresh machine. Hence one lock for every apt-get we
# run, and apt's own lock timeout for anything else on the machine that uses apt.
NODEFLEET_APT_LOCK="${NODEFLEET_APT_LOCK:-/var/lock/nodefleet-apt.lock}"

with_apt_lock() {
    (
        flock -w 1800 9 || { echo "apt: waited 30 minutes for $NODEFLEET_APT_LOCK (another install of nodefleet's)" >&2; exit 1; }
        "$@"
    ) 9>"$NODEFLEET_APT_LOCK"
}

apt_install() {
    local as=()
    [ "$(id -u)" -eq 0 ] || as=(sudo -n)
    with_apt_lock "${as[@]}" env DEBIAN_FRONTEND=noninteractive sh -c '
        apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null &&
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@" >/dev/null' apt_install "$@"
}
