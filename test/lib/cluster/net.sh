# shellcheck shell=bash
# test/lib/cluster/net.sh: the bridge on the host and one network namespace
# per node, joined to it by a veth pair.
# Sourced by test/cluster (after common.sh).

ensure_bridge() {
	local other
	other=$(ip -4 -o addr show to "$NET_PREFIX.0/24" | awk -v b="$BRIDGE" '$2 != b {print $2}')
	if [ -n "$other" ]; then
		die "$NET_PREFIX.0/24 is already on $other (another stack's cluster?): set GF2_CLUSTER_NET to three other octets"
	fi
	if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
		log "creating bridge $BRIDGE ($HOST_IP/24)"
		ip link add "$BRIDGE" type bridge
	fi
	if ! grep -q "inet $HOST_IP/24" <<<"$(ip -4 addr show dev "$BRIDGE")"; then
		ip addr add "$HOST_IP/24" dev "$BRIDGE"
	fi
	ip link set "$BRIDGE" up
}

ensure_ns() { # N
	local n=$1 ns hv nv ip
	ns=$(node_ns "$n")
	hv=$(host_veth "$n")
	nv=$(node_veth "$n")
	ip=$(node_ip "$n")
	if ! grep -qw "^$ns" <<<"$(ip netns list)"; then
		ip netns add "$ns"
	fi
	if ! ip link show "$hv" >/dev/null 2>&1; then
		log "node $n: namespace $ns, $NODE_IF $ip (host end $hv on $BRIDGE)"
		ip netns exec "$ns" ip link del "$NODE_IF" 2>/dev/null || true
		ip link add "$hv" type veth peer name "$nv"
		ip link set "$nv" netns "$ns"
		ip netns exec "$ns" ip link set "$nv" name "$NODE_IF"
	fi
	ip link set "$hv" master "$BRIDGE" up
	ip netns exec "$ns" ip link set lo up
	if ! grep -q "inet $ip/24" <<<"$(ip netns exec "$ns" ip -4 addr show dev "$NODE_IF")"; then
		ip netns exec "$ns" ip addr add "$ip/24" dev "$NODE_IF"
	fi
	ip netns exec "$ns" ip link set "$NODE_IF" up
}

delete_ns() { # N
	local ns
	ns=$(node_ns "$1")
	ip link del "$(host_veth "$1")" 2>/dev/null || true
	if grep -qw "^$ns" <<<"$(ip netns list)"; then
		ip netns del "$ns" 2>/dev/null || warn "could not delete namespace $ns"
	fi
}

delete_bridge() {
	if ip link show "$BRIDGE" >/dev/null 2>&1; then
		ip link del "$BRIDGE" || warn "could not delete bridge $BRIDGE"
	fi
}

# Cut node N off (its link down) or join it again.
node_link() { # N up|down
	ip netns exec "$(node_ns "$1")" ip link set "$NODE_IF" "$2"
}
