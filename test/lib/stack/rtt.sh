# shellcheck shell=bash
# test/lib/stack/rtt.sh: `test/stack up --rtt MS`, a network between the
# head and the bricks.
# Sourced by test/stack (after common.sh and state.sh).
#
# The head (smbd, the FUSE mount's glusterfs client, and any gfapi client
# run through RTT_EXEC) runs in a network namespace of its own, RTT_NETNS.
# Its loopback carries test/tools/delayrelay listening on 127.0.0.1:24007
# (glusterd) and on every port of the range glusterd gives bricks ports
# from (base-port 49152 to max-port 60999 by default, picked at random:
# a brick a test restarts gets another), each forwarded over a veth pair
# to the same port on the host side of the pair, where glusterd and the
# bricks listen (on all addresses).  The brick host name resolves to
# 127.0.0.1 (check_hostname), i.e. inside the namespace to the relay: the
# only way out of the namespace is the veth, and the only process that
# uses the host's side of it for Gluster is the relay, which holds each
# direction's bytes for half of MS.  SMB clients on the host reach smbd
# through the namespace's side of the veth (SMB_HOST): that hop takes no
# added delay.
#
# Names derive from the stack's port (GF2_STACK_PORT, default 4450), so
# that two stacks never collide: namespace gf2rtt-PORT, veth gf2rPORTh
# (host) / gf2rPORTn (namespace), addresses 10.252.(PORT mod 256).1/24 on
# the host and .2 in the namespace (test/cluster uses 10.251.x, the test
# platforms 10.250.x).  GF2_STACK_RTT_NET=A.B.C sets the /24 instead: a
# test platform's root sets it (10.253.X) for the stacks run inside it,
# whose namespace the host reaches through the platform's, so that its
# addresses are apart from the host's own stacks'.
#
# The relay listens on the address the brick host name resolves to, a
# loopback address (127.0.0.1 here; 127.0.1.1 in a test platform's root,
# Debian's convention there), so that every client that names the bricks
# by that name goes through it.
#
# `nsenter --net` (not `ip netns exec`, which also makes a mount namespace
# of its own) puts a process in the namespace: a FUSE mount made so is
# seen on the host.

RTT_NETNS=gf2rtt-$DEFAULT_PORT
RTT_VETH_HOST=gf2r${DEFAULT_PORT}h
RTT_VETH_NS=gf2r${DEFAULT_PORT}n
RTT_NET=${GF2_STACK_RTT_NET:-10.252.$((DEFAULT_PORT % 256))}
if ! [[ $RTT_NET =~ ^10\.[0-9]{1,3}\.[0-9]{1,3}$ ]]; then
	echo "test/stack: GF2_STACK_RTT_NET=$RTT_NET: the first three numbers of a 10.x.y.0/24 network" >&2
	exit 2
fi
RTT_HOST_ADDR=$RTT_NET.1
RTT_NS_ADDR=$RTT_NET.2
RTT_RELAY_PID=$STACK/rtt-relay.pid
RTT_RELAY_LOG=$STACK/rtt-relay.log
RTT_EXEC="nsenter --net=/run/netns/$RTT_NETNS"
RTT_EXEC_ARGV=(nsenter "--net=/run/netns/$RTT_NETNS")
# glusterd's port and the range of its brick ports (glusterd.vol's
# base-port and max-port, checked against the bricks it has now)
RTT_GLUSTERD_PORT=24007
RTT_BRICK_BASE=49152
RTT_BRICK_MAX=60999
RTT_MODE=""

# use_rtt MS|"": the stack is (to be) in round-trip mode: smbd listens in
# the namespace, which clients reach at its address
use_rtt() {
	RTT_MODE=$1
	if [ -n "$RTT_MODE" ]; then
		# shellcheck disable=SC2034 # read by smbd.sh, report.sh, up.sh
		SMB_HOST=$RTT_NS_ADDR
		LISTEN="${LISTEN:+$LISTEN }$RTT_NS_ADDR"
	fi
}

# in_head COMMAND...: COMMAND where the head runs (in the namespace in
# round-trip mode, else here)
in_head() {
	if [ -n "$RTT_MODE" ]; then
		"${RTT_EXEC_ARGV[@]}" "$@"
	else
		"$@"
	fi
}

rtt_valid() { # MS
	[[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]] &&
		awk -v v="$1" 'BEGIN { exit !(v > 0 && v <= 1000) }'
}

rtt_ns_up() {
	# a name left without its namespace (the file stays when what was
	# mounted on it went, e.g. with a test platform taken down around it)
	if [ -e "/run/netns/$RTT_NETNS" ] && ! mountpoint -q "/run/netns/$RTT_NETNS"; then
		log "removing the stale name of namespace $RTT_NETNS"
		rm -f "/run/netns/$RTT_NETNS"
	fi
	if [ ! -e "/run/netns/$RTT_NETNS" ]; then
		log "creating network namespace $RTT_NETNS ($RTT_NS_ADDR, host side $RTT_HOST_ADDR)"
		ip netns add "$RTT_NETNS" || die "ip netns add $RTT_NETNS failed"
	fi
	ip -n "$RTT_NETNS" link set lo up
	if ! ip link show "$RTT_VETH_HOST" >/dev/null 2>&1; then
		ip link add "$RTT_VETH_HOST" type veth peer name "$RTT_VETH_NS" \
			netns "$RTT_NETNS" || die "ip link add $RTT_VETH_HOST failed"
	fi
	ip addr replace "$RTT_HOST_ADDR/24" dev "$RTT_VETH_HOST"
	ip link set "$RTT_VETH_HOST" up
	ip -n "$RTT_NETNS" addr replace "$RTT_NS_ADDR/24" dev "$RTT_VETH_NS"
	ip -n "$RTT_NETNS" link set "$RTT_VETH_NS" up
	# glusterd answers over the veth
	wait_for 10 "veth" "${RTT_EXEC_ARGV[@]}" timeout 2 bash -c \
		"exec 3<>/dev/tcp/$RTT_HOST_ADDR/$RTT_GLUSTERD_PORT" ||
		die "glusterd does not answer on $RTT_HOST_ADDR:$RTT_GLUSTERD_PORT from $RTT_NETNS"
}

rtt_relay_pid() {
	local pid
	pid=$(head -n 1 "$RTT_RELAY_PID" 2>/dev/null | tr -dc '0-9')
	[ -n "$pid" ] || return 1
	[[ $(readlink "/proc/$pid/exe" 2>/dev/null) == */delayrelay* ]] || return 1
	echo "$pid"
}

rtt_relay_stop() {
	local pid
	pid=$(rtt_relay_pid || true)
	if [ -n "$pid" ]; then
		log "stopping the delay relay ($pid)"
		kill_pids delayrelay "$pid"
	fi
	rm -f "$RTT_RELAY_PID"
}

# the highest TCP port any brick of glusterd has now
rtt_max_brick_port() {
	gl volume status all 2>/dev/null |
		awk '$1 == "Brick" { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/ && $i >= 49152) { if ($i > m) m = $i; break } } END { print m + 0 }'
}

# The address the brick host name resolves to (IPv4, the first one, as
# the clients' resolver takes it): where the relay listens
rtt_listen_addr() {
	local a
	a=$(getent ahostsv4 "$(host_name)" | awk 'NR == 1 { print $1 }')
	case $a in
	127.*) echo "$a" ;;
	*) die "host name '$(host_name)' resolves to '$a', not an IPv4 loopback address: no place for the relay" ;;
	esac
}

# rtt_relay_start MS: (re)start the relay when it is not running with MS
# (listening on rtt_listen_addr)
rtt_relay_start() {
	local ms=$1 dir relay max last=$RTT_BRICK_MAX pid cmd listen
	listen=$(rtt_listen_addr)
	dir=$("$ROOT/test/tools/build" delayrelay) || die "building test/tools/delayrelay failed"
	relay=$dir/delayrelay
	max=$(rtt_max_brick_port)
	[ "$max" -le "$last" ] ||
		die "a brick of glusterd listens on port $max, above $last: glusterd.vol's max-port is not the default"
	pid=$(rtt_relay_pid || true)
	if [ -n "$pid" ]; then
		cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline")
		if [[ $cmd == *" --rtt $ms "* ]] && [[ $cmd == *" $listen:"* ]] &&
			[ ! "$relay" -nt "/proc/$pid" ]; then
			return 0
		fi
		rtt_relay_stop
	fi
	log "starting the delay relay in $RTT_NETNS: round trip $ms ms," \
		"$listen:$RTT_GLUSTERD_PORT and :$RTT_BRICK_BASE-$last -> $RTT_HOST_ADDR"
	"${RTT_EXEC_ARGV[@]}" setsid "$relay" --rtt "$ms" --pidfile "$RTT_RELAY_PID" \
		"$listen:$RTT_GLUSTERD_PORT=$RTT_HOST_ADDR" \
		"$listen:$RTT_BRICK_BASE-$last=$RTT_HOST_ADDR" \
		</dev/null >"$RTT_RELAY_LOG" 2>&1 9>&- &
	wait_for 10 "relay" grep -qx ready "$RTT_RELAY_LOG" ||
		die "the delay relay did not start: $(cat "$RTT_RELAY_LOG")"
}

# rtt_up MS: namespace, veth and relay for a round trip of MS
rtt_up() {
	rtt_ns_up
	rtt_relay_start "$1"
}

# rtt_down: relay, veth and namespace gone (the head's processes must be
# stopped first)
rtt_down() {
	rtt_relay_stop
	if [ -e "/run/netns/$RTT_NETNS" ]; then
		log "deleting network namespace $RTT_NETNS"
		ip netns delete "$RTT_NETNS" || warn "ip netns delete $RTT_NETNS failed"
	fi
	ip link delete "$RTT_VETH_HOST" 2>/dev/null || true
	state_unset RTT_MS
}
