# shellcheck shell=bash
# test/lib/cluster/common.sh: names, addresses, paths and small helpers of
# test/cluster (sourced by it, after it has set ROOT).

: "${ROOT:?test/lib/cluster/common.sh needs ROOT (sourced by test/cluster)}"

export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH"

CL=$ROOT/.cluster
STATE=$CL/state
FUSE=$CL/fuse
BRICKROOT=$CL/bricks

# The cluster's network: one bridge, one namespace per node.
BRIDGE=gf2cl0
NET_PREFIX=10.251.0
HOST_IP=$NET_PREFIX.1
NS_PREFIX=gf2cl-node
# The node's end of its veth pair, the same name in every namespace (so
# that every node has the same public_addresses file).
NODE_IF=eth0
MAX_NODES=4

VOLUME=gf2cl            # the data volume (replica 3)
LOCK_VOLUME=gf2cl-lock  # the cluster lock's volume (replica 3)
LOCK_PATH=/.ctdb.lock
# the module the nodes load: the checkout's own build, as test/stack serves it
MODULE=${GF2_CLUSTER_MODULE:-${GF2_STACK_MODULE:-glusterfs2}}
SHARE=gf2cl
SMB_PORT=445
USER1=gf2cl1 PASS1=gf2clpass1
USER2=gf2cl2 PASS2=gf2clpass2
HELPER=$ROOT/build/ctdb_mutex_glusterfs2_helper
BUILDLOG=$CL/build.log

node_ip() { echo "$NET_PREFIX.$((10 + $1))"; }
public_ip() { echo "$NET_PREFIX.$((100 + $1))"; }
node_ns() { echo "$NS_PREFIX$1"; }
node_dir() { echo "$CL/node$1"; }
host_veth() { echo "gf2cl$1h"; }

log() { echo "cluster: $*"; }
warn() { echo "cluster: WARNING: $*" >&2; }
die() {
	echo "cluster: error: $*" >&2
	exit 1
}

need_root() {
	[ "$(id -u)" = 0 ] || die "must run as root (namespaces, glusterd, ctdbd, smbd)"
}

# Bounded wait: wait_for SECONDS COMMAND...
wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 2; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.5
	done
	return 1
}

gl() { timeout 150 gluster --mode=script "$@"; }

state_get() { # KEY [DEFAULT]
	local v
	v=$(sed -n "s/^$1=//p" "$STATE" 2>/dev/null | tail -n 1)
	echo "${v:-${2:-}}"
}

state_set() { # KEY VALUE
	mkdir -p "$CL"
	touch "$STATE"
	sed -i "/^$1=/d" "$STATE"
	echo "$1=$2" >> "$STATE"
}

# The PID (as the host sees it) of node N's main ctdbd, or nothing: the
# ctdbd in the node's network namespace whose parent is not a ctdbd (its
# recovery daemon is a ctdbd child).
ctdbd_pid() {
	local p pp
	for p in $(ns_pids "$1"); do
		[ "$(readlink "/proc/$p/exe" 2>/dev/null)" = /usr/sbin/ctdbd ] || continue
		pp=$(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null)
		[ "$(readlink "/proc/$pp/exe" 2>/dev/null)" = /usr/sbin/ctdbd ] && continue
		echo "$p"
		return 0
	done
}

# The PID of node N's first process (node-init.sh, the node's PID 1).
node_init_pid() {
	local p
	p=$(ctdbd_pid "$1")
	[ -n "$p" ] && awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null
}

# Run a command inside node N as its own processes see the machine: its
# network, mount (its private /etc/ctdb, /etc/samba, /run, ...) and UTS
# PID namespaces.  Needs the node's ctdbd alive (its namespaces are
# entered).
on_node() { # N COMMAND...
	local n=$1 p
	shift
	p=$(ctdbd_pid "$n")
	[ -n "$p" ] || { echo "node $n: ctdbd is not running" >&2; return 1; }
	nsenter -t "$p" -n -m -u -p -- "$@"
}

# Processes whose network namespace is node N's.
ns_pids() { ip netns pids "$(node_ns "$1")" 2>/dev/null || true; }

kill_pids() { # SIGNAL PID...
	local sig=$1
	shift
	[ $# -gt 0 ] || return 0
	kill "-$sig" "$@" 2>/dev/null || true
}
