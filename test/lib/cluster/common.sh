# shellcheck shell=bash
# test/lib/cluster/common.sh: names, addresses, paths and small helpers of
# test/cluster (sourced by it, after it has set ROOT).

: "${ROOT:?test/lib/cluster/common.sh needs ROOT (sourced by test/cluster)}"

export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH"

CL=$ROOT/.cluster
STATE=$CL/state
FUSE=$CL/fuse
BRICKROOT=$CL/bricks

# The names and addresses of the cluster follow the stack of the same
# checkout (GF2_STACK_PORT and GF2_STACK_VOLUME, as test/stack reads them),
# so that the clusters of two stacks on one machine never share a bridge,
# a namespace, an address or a volume: CL_ID is the stack's port.
CL_ID=${GF2_STACK_PORT:-4450}
case $CL_ID in
[1-9] | [1-9][0-9] | [1-9][0-9][0-9] | [1-9][0-9][0-9][0-9] | [1-9][0-9][0-9][0-9][0-9]) ;;
*) echo "test/cluster: GF2_STACK_PORT=$CL_ID: a port number" >&2; exit 2 ;;
esac
STACK_VOLUME=${GF2_STACK_VOLUME:-gf2test}

# The cluster's network: one bridge, one namespace per node.  Interface
# names stay within Linux's 15 characters (gf2cl65535, gf2c65535n4h).
# The /24 is 10.251.(port mod 256); GF2_CLUSTER_NET (three octets)
# overrides it, for two stacks whose ports differ by a multiple of 256
# (`up` refuses a /24 that is already on another interface).
BRIDGE=gf2cl$CL_ID
NET_PREFIX=${GF2_CLUSTER_NET:-10.251.$((CL_ID % 256))}
HOST_IP=$NET_PREFIX.1
NS_PREFIX=gf2cl$CL_ID-node
# The node's end of its veth pair, the same name in every namespace (so
# that every node has the same public_addresses file).
NODE_IF=eth0
MAX_NODES=4

VOLUME=${STACK_VOLUME}cl            # the data volume (replica 3)
LOCK_VOLUME=${STACK_VOLUME}cl-lock  # the cluster lock's volume (replica 3)
LOCK_PATH=/.ctdb.lock
# the module the nodes load: the checkout's own build, as test/stack serves it
MODULE=${GF2_CLUSTER_MODULE:-${GF2_STACK_MODULE:-glusterfs2}}
SHARE=gf2cl
# the same volume through the stock vfs_glusterfs and as a FUSE re-export
# (the default VFS on a FUSE mount of it inside each node), the two ways
# of serving it that glusterfs2 replaces, for side-by-side failover tests
STOCK_SHARE=gf2cl-stock
FUSE_SHARE=gf2cl-fuse
NODE_FUSE=/run/gf2cl-fuse
NODE_LOCK_FUSE=/run/gf2cl-lock  # --lock fcntl: the lock volume, in each node
SMB_PORT=445
USER1=gf2cl1 PASS1=gf2clpass1
USER2=gf2cl2 PASS2=gf2clpass2
HELPER=$ROOT/build/ctdb_mutex_glusterfs2_helper
BUILDLOG=$CL/build.log

node_ip() { echo "$NET_PREFIX.$((10 + $1))"; }
public_ip() { echo "$NET_PREFIX.$((100 + $1))"; }
node_ns() { echo "$NS_PREFIX$1"; }
node_dir() { echo "$CL/node$1"; }
host_veth() { echo "gf2c${CL_ID}n$1h"; }
# The node's end while it is still on the host, before it moves into the
# node's namespace and is renamed NODE_IF.
node_veth() { echo "gf2c${CL_ID}n$1n"; }

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
