# shellcheck shell=bash
# test/lib/stack/state.sh: the stack's state (.stack/state, KEY=VALUE
# lines: what `up` made, for `env`, `status` and `down`) and the lock that
# serialises `up` and `down` of one checkout.
# Sourced by test/stack (after common.sh).

state_get() { # KEY [DEFAULT]
	local v=""
	if [ -f "$STATE" ]; then
		v=$(sed -n "s/^$1=//p" "$STATE" | tail -n 1)
	fi
	if [ -z "$v" ]; then v=${2:-}; fi
	printf '%s' "$v"
}

state_set() { # KEY VALUE
	mkdir -p "$STACK"
	local tmp=$STATE.tmp.$$
	{
		if [ -f "$STATE" ]; then grep -v "^$1=" "$STATE" || true; fi
		printf '%s=%s\n' "$1" "$2"
	} > "$tmp"
	mv -f "$tmp" "$STATE"
}

take_lock() {
	mkdir -p "$STACK"
	exec 9> "$STACK/.lock"
	if ! flock -w 900 9; then
		die "another test/stack up/down holds $STACK/.lock for 15 minutes"
	fi
}

state_unset() { # KEY
	[ -f "$STATE" ] || return 0
	local tmp=$STATE.tmp.$$
	{ grep -v "^$1=" "$STATE" || true; } > "$tmp"
	mv -f "$tmp" "$STATE"
}
