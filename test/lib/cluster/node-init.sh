#!/bin/bash
# test/lib/cluster/node-init.sh N DIR BINDS FUSE_SOURCE FUSE_DIR
# [LOCK_SOURCE LOCK_DIR]: the first process of node N,
# run by test/cluster in the node's new network, mount, UTS and PID
# namespaces.  It names the node, gives it its own /proc, /run and CTDB and
# Samba directories, starts ctdbd and reaps what the node leaves (it is
# the node's PID 1).  When ctdbd exits, it exits, and with it every other
# process of the node (the kernel ends a PID namespace with its first
# process): the node is down.
#
# The node needs a PID namespace of its own: 50.samba looks for smbd with
# `killall smbd` and kills what it finds, which on a shared PID namespace
# would be every smbd of the machine.
#
# FUSE_SOURCE (HOST:/VOLUME) is mounted on FUSE_DIR inside the node, for
# the share that re-exports it; a failed mount is logged and the node
# starts anyway (that share then fails, the others serve).  LOCK_SOURCE,
# when not empty, is the lock volume, mounted on LOCK_DIR for CTDB's fcntl
# helper (test/cluster up --lock fcntl).
set -eu
n=$1 d=$2 binds=$3 fuse_src=$4 fuse_dir=$5 lock_src=${6:-} lock_dir=${7:-}
hostname "gf2cl-node$n"
mount -t proc proc /proc
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/ctdb /run/samba /run/lock
for b in $binds; do
	mount --bind "$d/${b%%:*}" "${b#*:}"
done
mkdir -p "$fuse_dir"
mount -t glusterfs -o log-file=/var/log/samba/fuse-mount.log "$fuse_src" "$fuse_dir" ||
	echo "node $n: FUSE mount of $fuse_src on $fuse_dir failed" >&2
if [ -n "$lock_src" ]; then
	mkdir -p "$lock_dir"
	mount -t glusterfs -o log-file=/var/log/ctdb/lock-fuse.log "$lock_src" "$lock_dir" ||
		echo "node $n: FUSE mount of $lock_src on $lock_dir failed" >&2
fi
/usr/sbin/ctdbd --interactive &
ctdbd=$!
trap 'kill -TERM $ctdbd 2>/dev/null' TERM INT
while kill -0 "$ctdbd" 2>/dev/null; do
	wait "$ctdbd" || true
done
