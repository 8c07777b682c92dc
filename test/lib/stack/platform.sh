# shellcheck shell=bash
# test/lib/stack/platform.sh: `test/stack CMD --platform NAME` for the
# Debian 13 test platforms (test/platform/root): the same stack, brought
# up by this checkout's test/stack inside the platform's root and network
# namespace (`test/platform/root run NAME test/stack ...`), its smbd also
# listening on the namespace's address; `env` prints the keys of the stack
# inside, rewritten for a client on the host.
#
# `up --platform NAME --rtt MS`: the stack inside puts its head (smbd, the
# FUSE client) in a network namespace of its own within the platform's
# root (test/lib/stack/rtt.sh there, on the platform's network
# 10.253.X.0/24, GF2_STACK_RTT_NET), where the platform's address is not:
# the host then reaches that smbd by routing, a route to 10.253.X.0/24
# through the platform's address here, forwarding on in the platform's
# namespace, and in the head's namespace a route back to this machine's
# side of the platform's veth (only that address: the head still reaches
# Gluster through the relay alone).  `env` gives the head's address as
# SMB_HOST, and RTT_EXEC as a command prefix for the host (EXEC, then the
# inner RTT_EXEC).
# Sourced by test/stack (after common.sh).

PLATFORM_TOOL=$ROOT/test/platform/root

# The keys of `env` that are paths: inside the platform they are paths in
# its root; for the host they are prefixed with the root's directory.
PLATFORM_PATH_KEYS="FUSE_MOUNT LOCAL_DIR SMB_CONF SMB_LOGDIR STACK_DIR
BRICK_DIRS GLUSTERFS2_MODULE ASAN_REPORTS"

# platform_load NAME: P_NAME, P_ROOT, P_NETNS, P_ADDRESS, P_HOST_ADDRESS,
# P_BUILT, P_UP, P_CHECKOUT_STATE and P_RTT_NET (test/platform/root info)
platform_load() {
	local info
	P_RTT_NET=""
	info=$("$PLATFORM_TOOL" info "$1") || exit 2
	eval "$(sed 's/^/P_/' <<<"$info")"
	PLATFORM_MARK=$P_CHECKOUT_STATE/stack-started-platform
}

platform_not_built() {
	die "platform $P_NAME is not built: run test/platform/root build $P_NAME" \
		"(a debootstrapped root, 4 to 6.5 min, about 1.4 GB)"
}

# The identity of the running platform (its network namespace's inode):
# `up` records it when it starts the platform, `down` stops the platform
# only if it is still that one.
platform_instance() {
	stat -Lc %i "/run/netns/$P_NETNS" 2>/dev/null || true
}

# in_stack CMD...: CMD inside the platform, in this checkout
in_stack() {
	"$PLATFORM_TOOL" run "$P_NAME" "$@"
}

platform_up() {
	need_root
	[ "$P_BUILT" = 1 ] || platform_not_built
	if [ "$P_UP" = 0 ]; then
		log "starting platform $P_NAME (test/platform/root up $P_NAME)"
		"$PLATFORM_TOOL" up "$P_NAME" || die "test/platform/root up $P_NAME failed"
		mkdir -p "$P_CHECKOUT_STATE"
		platform_instance > "$PLATFORM_MARK"
	else
		# already up: started by an earlier `up` (the mark says so) or
		# by somebody else; the platform's own services are checked
		"$PLATFORM_TOOL" up "$P_NAME" || die "test/platform/root up $P_NAME failed"
	fi
	local a rtt=0
	for a in "$@"; do
		case $a in
		--rtt | --rtt=*) rtt=1 ;;
		esac
	done
	if [ "$rtt" = 1 ]; then
		# smbd serves in the head's namespace, where the platform's
		# address is not
		in_stack test/stack up "$@" ||
			die "test/stack up inside platform $P_NAME failed"
	else
		in_stack env GF2_STACK_LISTEN="$P_ADDRESS" test/stack up "$@" ||
			die "test/stack up inside platform $P_NAME failed"
	fi
	platform_rtt_routes
	local lines
	lines=$(platform_env_lines)
	log "up on platform $P_NAME ($(in_stack smbd -V)): smbd at" \
		"$(sed -n 's/^SMB_HOST=//p' <<<"$lines"):$(sed -n 's/^SMB_PORT=//p' <<<"$lines")" \
		"from the host (test/stack env --platform $P_NAME)"
}

# The routes between this machine and the head's namespace of a stack up
# with --rtt inside the platform (see the top of this file); without
# --rtt, this machine's route to that network is taken away.
platform_rtt_routes() {
	local out ms netns haddr net
	out=$(in_stack test/stack env 2>/dev/null) || return 0
	ms=$(sed -n 's/^RTT_MS=//p' <<<"$out")
	if [ -z "$ms" ]; then
		platform_rtt_route_del
		return 0
	fi
	eval "netns=$(sed -n 's/^RTT_NETNS=//p' <<<"$out")"
	eval "haddr=$(sed -n 's/^RTT_HOST_ADDR=//p' <<<"$out")"
	net=${haddr%.*}
	[ -e "$P_ROOT/run/netns/$netns" ] ||
		die "no namespace $netns in platform $P_NAME (its $P_ROOT/run/netns/$netns)"
	log "routing $net.0/24 (the head's namespace $netns in platform $P_NAME) through $P_ADDRESS"
	nsenter --net="/run/netns/$P_NETNS" sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward' ||
		die "forwarding in $P_NETNS failed"
	nsenter --net="$P_ROOT/run/netns/$netns" ip route replace "$P_HOST_ADDRESS/32" via "$haddr" ||
		die "the route back from $netns to $P_HOST_ADDRESS failed"
	ip route replace "$net.0/24" via "$P_ADDRESS" ||
		die "ip route replace $net.0/24 via $P_ADDRESS failed"
}

platform_rtt_route_del() {
	[ -n "$P_RTT_NET" ] || return 0
	if [ -n "$(ip route show "$P_RTT_NET.0/24" via "$P_ADDRESS" 2>/dev/null)" ]; then
		log "removing the route to $P_RTT_NET.0/24 through $P_ADDRESS"
		ip route del "$P_RTT_NET.0/24" via "$P_ADDRESS" 2>/dev/null || true
	fi
}

# The inner stack's `env` lines, rewritten for the host: paths through
# the root; SMB_HOST the platform's address (with --rtt, the head's in its
# namespace, routed from here: platform_rtt_routes); RTT_EXEC run from here.
platform_env_lines() {
	local out err k v w p rtt
	err=$(mktemp)
	if ! out=$(in_stack test/stack env 2> "$err"); then
		# "stack is not up" is said by the caller, anything else here
		grep -v '^stack is not up' "$err" >&2 || true
		rm -f "$err"
		return 1
	fi
	rm -f "$err"
	rtt=$(sed -n 's/^RTT_MS=//p' <<<"$out")
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		k=${line%%=*}
		# the inner test/stack quoted the value (q): undo it
		eval "v=${line#*=}"
		if [ "$k" = SMB_HOST ]; then
			[ -n "$rtt" ] || v=$P_ADDRESS
		elif [ "$k" = RTT_EXEC ]; then
			v="$ROOT/test/stack exec --platform $P_NAME -- $v"
		elif [ -n "$v" ] && grep -qw -- "$k" <<<"$PLATFORM_PATH_KEYS"; then
			p=""
			for w in $v; do p="$p${p:+ }$P_ROOT$w"; done
			v=$p
		fi
		printf '%s=%s\n' "$k" "$(q "$v")"
	done <<<"$out"
	printf '%s=%s\n' PLATFORM "$(q "$P_NAME")" \
		PLATFORM_ROOT "$(q "$P_ROOT")" \
		PLATFORM_NETNS "$(q "$P_NETNS")" \
		PLATFORM_SAMBA "$(q "$(in_stack smbd -V | sed 's/^Version //')")" \
		EXEC "$(q "$ROOT/test/stack exec --platform $P_NAME --")"
}

platform_env() {
	if [ "$P_UP" = 0 ] || ! platform_env_lines; then
		echo "stack is not up: run test/stack up --platform $P_NAME" >&2
		exit 1
	fi
}

platform_status() {
	local rc=0 lines port host
	echo "platform $P_NAME: root $P_ROOT ($([ "$P_BUILT" = 1 ] && echo built || echo "not built: test/platform/root build $P_NAME"))"
	if [ "$P_UP" = 0 ]; then
		echo "platform $P_NAME: not up (namespace $P_NETNS absent)"
		return 0
	fi
	echo "platform $P_NAME: up, namespace $P_NETNS, address $P_ADDRESS (host side $P_HOST_ADDRESS), $(in_stack smbd -V)"
	echo "the stack inside the platform (paths in its root):"
	if ! in_stack test/stack status | sed 's/^/    /'; then rc=1; fi
	if lines=$(platform_env_lines 2>/dev/null); then
		port=$(sed -n 's/^SMB_PORT=//p' <<<"$lines")
		eval "host=$(sed -n 's/^SMB_HOST=//p' <<<"$lines")"
		if timeout 60 smbclient "//$host/local" -p "$port" \
			-U "$USER1%$PASS1" -c ls >/dev/null 2>&1; then
			echo "from the host: //$host/local on port $port: OK"
		else
			echo "from the host: //$host/local on port $port: FAIL"
			rc=1
		fi
	fi
	return "$rc"
}

platform_down() {
	need_root
	if [ "$P_UP" = 0 ]; then
		rm -f "$PLATFORM_MARK"
		log "platform $P_NAME is not up: nothing to do"
		return 0
	fi
	in_stack test/stack down "$@" || warn "test/stack down inside platform $P_NAME failed"
	platform_rtt_route_del
	if [ -f "$PLATFORM_MARK" ] && [ "$(cat "$PLATFORM_MARK")" = "$(platform_instance)" ]; then
		log "stopping platform $P_NAME (test/platform/root down $P_NAME), which test/stack up --platform started"
		"$PLATFORM_TOOL" down "$P_NAME" || warn "test/platform/root down $P_NAME failed"
		rm -f "$PLATFORM_MARK"
	else
		log "leaving platform $P_NAME up: test/stack up --platform did not start it" \
			"(test/platform/root down $P_NAME stops it)"
	fi
}

# platform_exec -- CMD...: CMD inside the platform, in the checkout (in the
# caller's directory when that is inside the checkout).
platform_exec() {
	local cwd
	if [ "${1:-}" = -- ]; then shift; fi
	[ $# -gt 0 ] || die "usage: test/stack exec --platform NAME -- COMMAND..."
	if [ "$P_UP" = 0 ]; then
		die "platform $P_NAME is not up: run test/stack up --platform $P_NAME" \
			"(or test/platform/root up $P_NAME)"
	fi
	cwd=$(pwd -P)
	case $cwd/ in
	"$ROOT"/*) ;;
	*) cwd=$ROOT ;;
	esac
	# shellcheck disable=SC2016 # expanded by that sh
	exec "$PLATFORM_TOOL" run "$P_NAME" sh -c 'cd "$1" && shift && exec "$@"' sh "$cwd" "$@"
}

# platform_main NAME CMD [ARG...]
platform_main() {
	local name=$1 cmd=${2:-}
	shift
	[ $# -eq 0 ] || shift
	platform_load "$name"
	case $cmd in
	up) platform_up "$@" ;;
	down) platform_down "$@" ;;
	env) [ $# -eq 0 ] || die "env takes no arguments"; platform_env ;;
	status) platform_status ;;
	exec) platform_exec "$@" ;;
	*)
		usage >&2
		exit 2
		;;
	esac
}
