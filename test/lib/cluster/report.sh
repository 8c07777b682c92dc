# shellcheck shell=bash
# test/lib/cluster/report.sh: test/cluster env | status.
# Sourced by test/cluster.

is_up() {
	[ "$(state_get UP 0)" = 1 ] && [ -n "$(ctdbd_pid 1)" ]
}

cmd_env() {
	is_up || { echo "cluster is not up: run test/cluster up" >&2; exit 1; }
	local nn i pub="" nodes=""
	nn=$(state_get NODES 3)
	for ((i = 1; i <= nn; i++)); do
		pub="$pub${pub:+ }$(public_ip "$i")"
		nodes="$nodes${nodes:+ }$(node_ip "$i")"
	done
	local lock helper
	lock=$(state_get LOCK gfapi)
	helper=$(basename "$HELPER")
	[ "$lock" != fcntl ] || helper=ctdb_mutex_fcntl_helper
	local shareopts
	shareopts=$(grep -v '^$' "$(share_options_file)" 2>/dev/null | paste -sd ';' || true)
	cat <<EOF
PUBLIC_IPS='$pub'
NODE_IPS='$nodes'
NODES=$nn
SMB_PORT=$SMB_PORT
SMB_USER=$USER1
SMB_PASS=$PASS1
SMB_USER2=$USER2
SMB_PASS2=$PASS2
SHARE=$SHARE
STOCK_SHARE=$STOCK_SHARE
FUSE_SHARE=$FUSE_SHARE
GLUSTER_VOLUME=$VOLUME
LOCK_VOLUME=$LOCK_VOLUME
VFS_MODULE=$MODULE
FUSE_MOUNT=$FUSE
HOST_IP=$HOST_IP
NS_PREFIX=$NS_PREFIX
BRIDGE=$BRIDGE
HOST_VETHS='$(for ((i = 1; i <= nn; i++)); do printf '%s ' "$(host_veth "$i")"; done | sed 's/ $//')'
CLUSTER_DIR=$CL
LOCK=$lock
LOCK_HELPER=$helper
SHARE_OPTIONS='$shareopts'
EOF
}

cmd_status() {
	is_up || { echo "cluster is not up"; exit 1; }
	local nn i a bad=0 tmp
	nn=$(state_get NODES 3)
	for ((i = 1; i <= nn; i++)); do
		printf 'node %s: ctdbd %s, smbd %s\n' "$i" "$(ctdbd_pid "$i" || true)" \
			"$(on_node "$i" cat /run/samba/smbd.pid 2>/dev/null || echo -)"
	done
	ctdb_on 1 status || bad=1
	ctdb_on 1 ip all || bad=1
	tmp=$(mktemp -d)
	for a in $(for ((i = 1; i <= nn; i++)); do node_ip "$i"; public_ip "$i"; done); do
		(timeout 60 smbclient "//$a/$SHARE" -p "$SMB_PORT" -U "$USER1%$PASS1" -c 'ls' \
			> "$tmp/$a" 2>&1 && echo ok > "$tmp/$a.ok") &
	done
	wait
	for a in $(for ((i = 1; i <= nn; i++)); do node_ip "$i"; public_ip "$i"; done); do
		if [ -f "$tmp/$a.ok" ]; then
			echo "smbclient //$a/$SHARE: ok"
		else
			echo "smbclient //$a/$SHARE: FAILED: $(tail -n 2 "$tmp/$a" | tr '\n' ' ')"
			bad=1
		fi
	done
	rm -rf "$tmp"
	return $bad
}
