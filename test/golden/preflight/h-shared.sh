#!/bin/sh
# nodefleet hardware preflight for host h-shared: runs before anything is installed.
# Target (sum of the nodes on this host): 16 cores, 48 GB memory, 2000 GB data disk on SSD.
set -eu

mode=enforce
mount=/data
want_cores=16
want_mem_gb=48
want_disk_gb=2000
want_ssd=1

findings=""
short() { findings="${findings}shortfall: $1
"; }

cores=$(nproc)
mem_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
# The kernel keeps part of RAM for itself: a 32 GB host reports about 31.3 GiB in
# MemTotal. Count memory in GiB and accept 94% of the target.
mem_gb=$(( mem_kb / 1048576 ))
mem_floor_kb=$(( want_mem_gb * 1048576 * 94 / 100 ))

if [ ! -d "$mount" ]; then
	echo "preflight: data mount point $mount does not exist on this host" >&2
	exit 2
fi
source_dev=$(findmnt -n -o SOURCE --target "$mount")
# Filesystem size in GB (10^9 bytes); ext4 keeps about 2% for itself, accept 95%.
disk_bytes=$(df -B1 --output=size "$mount" | tail -n 1 | tr -d ' ')
disk_gb=$(( disk_bytes / 1000000000 ))
disk_floor=$(( want_disk_gb * 95 / 100 ))
# A disk is rotational if it or any device under it (partition, LVM, RAID) is.
rotational=$(lsblk -n -s -o ROTA "$source_dev" 2>/dev/null | tr -d ' ' | sort -u | tail -n 1)
[ -n "$rotational" ] || rotational=unknown

echo "facts: cores=$cores memory_gib=$mem_gb disk_gb=$disk_gb rotational=$rotational device=$source_dev mount=$mount"

[ "$cores" -ge "$want_cores" ] || short "cores: has $cores, needs $want_cores"
[ "$mem_kb" -ge "$mem_floor_kb" ] || short "memory: has $mem_gb GiB, needs $want_mem_gb GB"
[ "$disk_gb" -ge "$disk_floor" ] || short "data disk $mount: has $disk_gb GB, needs $want_disk_gb GB"
if [ "$want_ssd" = 1 ] && [ "$rotational" != 0 ]; then
	short "data disk $mount: $source_dev is not reported as solid state (rotational=$rotational), needs an SSD"
fi

if [ -z "$findings" ]; then
	echo "preflight: host meets the target"
	exit 0
fi
printf '%s' "$findings"
if [ "$mode" = enforce ]; then
	echo "preflight: host h-shared is below the hardware target (hardwareCheck: enforce)" >&2
	exit 1
fi
echo "preflight: host h-shared is below the hardware target; continuing (hardwareCheck: warn)"
