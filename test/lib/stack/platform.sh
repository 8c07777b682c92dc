# shellcheck shell=bash
# test/lib/stack/platform.sh: `test/stack CMD --platform NAME` for the
# Debian 13 test platforms (test/platform/root): the same stack, brought
# up by this checkout's test/stack inside the platform's root and network
# namespace (`test/platform/root run NAME test/stack ...`), its smbd also
# listening on the namespace's address; `env` prints the keys of the stack
# inside, rewritten for a client on the host.
# Sourced by test/stack (after common.sh).

PLATFORM_TOOL=$ROOT/test/platform/root

# The keys of `env` that are paths: inside the platform they are paths in
# its root; for the host they are prefixed with the root's directory.
PLATFORM_PATH_KEYS="FUSE_MOUNT LOCAL_DIR SMB_CONF SMB_LOGDIR STACK_DIR
BRICK_DIRS GLUSTERFS2_MODULE ASAN_REPORTS"

# platform_load NAME: P_NAME, P_ROOT, P_NETNS, P_ADDRESS, P_HOST_ADDRESS,
# P_BUILT, P_UP and P_CHECKOUT_STATE (test/platform/root info)
platform_load() {
	local info
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
	in_stack env GF2_STACK_LISTEN="$P_ADDRESS" test/stack up "$@" ||
		die "test/stack up inside platform $P_NAME failed"
	local port
	port=$(platform_env_lines | sed -n 's/^SMB_PORT=//p')
	log "up on platform $P_NAME ($(in_stack smbd -V)): smbd at $P_ADDRESS:$port" \
		"from the host (test/stack env --platform $P_NAME)"
}

# The inner stack's `env` lines, rewritten for the host.
platform_env_lines() {
	local out err k v w p
	err=$(mktemp)
	if ! out=$(in_stack test/stack env 2> "$err"); then
		# "stack is not up" is said by the caller, anything else here
		grep -v '^stack is not up' "$err" >&2 || true
		rm -f "$err"
		return 1
	fi
	rm -f "$err"
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		k=${line%%=*}
		# the inner test/stack quoted the value (q): undo it
		eval "v=${line#*=}"
		if [ "$k" = SMB_HOST ]; then
			v=$P_ADDRESS
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
	local rc=0 lines port
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
		if timeout 60 smbclient "//$P_ADDRESS/local" -p "$port" \
			-U "$USER1%$PASS1" -c ls >/dev/null 2>&1; then
			echo "from the host: //$P_ADDRESS/local on port $port: OK"
		else
			echo "from the host: //$P_ADDRESS/local on port $port: FAIL"
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
