#!/bin/sh
# nodefleet data volume for host h1: wait for the attached device, create a
# filesystem only on a blank device, and mount it by UUID at /data.
set -eu
dev=/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_vol0123456789abcdef0
mount=/data

i=0
while [ ! -b "$dev" ]; do
	i=$((i + 1))
	if [ "$i" -gt 90 ]; then
		echo "data-volume: $dev did not appear within 180 s" >&2
		exit 1
	fi
	sleep 2
done

# Never format a device that already holds a filesystem: chain data may live there.
fstype=$(blkid -o value -s TYPE "$dev" || true)
if [ -z "$fstype" ]; then
	echo "data-volume: $dev is blank, creating ext4"
	mkfs.ext4 -q -L nodefleet-data "$dev"
	fstype=ext4
fi
uuid=$(blkid -o value -s UUID "$dev")

mkdir -p "$mount"
if ! grep -q "^UUID=$uuid " /etc/fstab; then
	echo "UUID=$uuid $mount $fstype defaults,nofail,noatime 0 2" >> /etc/fstab
fi
if ! mountpoint -q "$mount"; then
	mount "$mount"
fi
echo "data-volume: $dev ($fstype, UUID=$uuid) mounted at $mount"
