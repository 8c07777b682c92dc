# shellcheck shell=bash
# test/lib/cluster/up.sh: test/cluster up [--nodes N] [--lock gfapi|fcntl]
# [--share-option 'NAME = VALUE']...
# Sourced by test/cluster.

ensure_build() {
	local mod newer=""
	mod=$(smbd -b | sed -n 's/.*MODULESDIR: //p')/vfs/$MODULE.so
	if [ -f "$mod" ] && [ -x "$HELPER" ]; then
		newer=$(find "$ROOT/source" "$ROOT/include" "$ROOT/tools" "$ROOT/wscript" \
			-newer "$mod" -type f -print -quit 2>/dev/null || true)
		[ -n "$newer" ] || return 0
	fi
	log "building $MODULE and the mutex helper (log: $BUILDLOG)"
	(
		cd "$ROOT" || exit 1
		if ! grep -qx "MODULE_NAME = '$MODULE'" build/c4che/_cache.py 2>/dev/null; then
			timeout 3600 ./waf configure --module-name="$MODULE" || exit 1
		fi
		timeout 3600 ./waf build && timeout 600 ./waf install
	) > "$BUILDLOG" 2>&1 || { tail -n 20 "$BUILDLOG" >&2; die "build failed"; }
	touch "$mod"
}

cluster_healthy() { # NNODES: every node OK and every public address held
	local nn=$1 ips
	ctdb_on 1 nodestatus all >/dev/null 2>&1 || return 1
	ips=$(ctdb_on 1 -X ip 2>/dev/null | awk -F'|' 'NR > 1 && $3 != "-1" {print $2}' | grep -c .)
	[ "$ips" = "$nn" ]
}

smb_answers() { # IP
	timeout 3 bash -c "exec 3<>/dev/tcp/$1/$SMB_PORT" 2>/dev/null
}

# The share options asked for, one a line, against the running cluster's:
# a change rewrites every running node's smb.conf and reloads its smbd.
apply_share_options() { # NNODES OPTIONS-TEXT
	local nn=$1 want=$2 have i
	have=$(cat "$(share_options_file)" 2>/dev/null || true)
	[ "$have" != "$want" ] || return 0
	printf '%s' "$want" > "$(share_options_file)"
	[ -z "$want" ] || printf '\n' >> "$(share_options_file)"
	for ((i = 1; i <= nn; i++)); do
		[ -n "$(ctdbd_pid "$i")" ] || continue
		log "node $i: share options of [$SHARE] changed: smb.conf rewritten, smbd reloads it"
		write_node_smbconf "$i"
		# shellcheck disable=SC2016 # expanded by the node's shell
		on_node "$i" timeout 30 smbcontrol smbd reload-config >/dev/null 2>&1 ||
			on_node "$i" sh -c 'kill -HUP "$(cat /run/samba/smbd.pid)"' ||
			warn "node $i: smbd did not take the new smb.conf"
	done
}

# One --share-option's value checked: NAME = VALUE on one line.
check_share_option() { # OPTION
	case $1 in
	*=*) ;;
	*) die "--share-option '$1': NAME = VALUE" ;;
	esac
	case $1 in
	*$'\n'* | *'['* | *']'*) die "--share-option '$1': one line, no section" ;;
	esac
}

# test/cluster options [--share-option 'NAME = VALUE']...: the share
# options of a cluster that is up, set as `up` sets them, without the rest
# of `up`'s checks.
cmd_options() {
	local opts="" opt
	while [ $# -gt 0 ]; do
		case $1 in
		--share-option)
			[ $# -ge 2 ] || die "--share-option needs 'NAME = VALUE'"
			opt=$2
			shift 2
			;;
		--share-option=*) opt=${1#--share-option=}; shift ;;
		*) die "unknown option $1 (options [--share-option 'NAME = VALUE']...)" ;;
		esac
		check_share_option "$opt"
		opts="$opts${opts:+$'\n'}$opt"
	done
	need_root
	if [ "$(state_get UP 0)" != 1 ] || [ -z "$(ctdbd_pid 1)" ]; then
		die "cluster is not up: run test/cluster up"
	fi
	apply_share_options "$(state_get NODES 3)" "$opts"
}

cmd_up() {
	local nn=3 lock=gfapi opts="" opt=""
	while [ $# -gt 0 ]; do
		case $1 in
		--share-option)
			[ $# -ge 2 ] || die "--share-option needs 'NAME = VALUE'"
			opt=$2
			shift 2
			;;
		--share-option=*) opt=${1#--share-option=}; shift ;;
		--nodes) nn=${2:-}; shift 2 || die "--nodes needs a number" ;;
		--nodes=*) nn=${1#--nodes=}; shift ;;
		--lock) lock=${2:-}; shift 2 || die "--lock needs gfapi or fcntl" ;;
		--lock=*) lock=${1#--lock=}; shift ;;
		*) die "unknown option $1 (up [--nodes N] [--lock gfapi|fcntl] [--share-option 'NAME = VALUE']...)" ;;
		esac
		if [ -n "$opt" ]; then
			check_share_option "$opt"
			opts="$opts${opts:+$'\n'}$opt"
			opt=""
		fi
	done
	case $nn in
	[2-4]) ;;
	*) die "--nodes $nn: 2 to $MAX_NODES" ;;
	esac
	case $lock in
	gfapi | fcntl) ;;
	*) die "--lock $lock: gfapi or fcntl" ;;
	esac
	need_root
	command -v ctdbd >/dev/null || die "ctdbd missing: scripts/install-deps installs ctdb"
	glusterd_answers || die "glusterd does not answer (it is started by test/stack up)"
	mkdir -p "$CL"

	local i old oldlock
	old=$(state_get NODES)
	oldlock=$(state_get LOCK gfapi)
	if [ -n "$old" ] && { [ "$old" != "$nn" ] || [ "$oldlock" != "$lock" ]; }; then
		log "cluster had $old nodes and the $oldlock lock, now $nn and $lock: restarting the nodes"
		for ((i = MAX_NODES; i >= 1; i--)); do stop_node "$i"; delete_ns "$i"; done
	fi
	state_set NODES "$nn"
	state_set LOCK "$lock"
	apply_share_options "$nn" "$opts"

	ensure_build
	ensure_bridge
	for ((i = 1; i <= nn; i++)); do ensure_ns "$i"; done

	# The lock volume: a node cut off loses the lock within ~10 s.
	ensure_volume "$LOCK_VOLUME" server.keepalive-time=5 server.keepalive-interval=2 \
		server.keepalive-count=3 network.ping-timeout=10
	# The data volume: upcall invalidation on (a change through one head
	# drops what the other heads cached of that file).
	ensure_volume "$VOLUME" features.cache-invalidation=on \
		features.cache-invalidation-timeout=600
	ensure_fuse
	ensure_unix_users

	for ((i = 1; i <= nn; i++)); do
		if [ -z "$(ctdbd_pid "$i")" ]; then write_node_config "$i" "$nn"; fi
	done
	for ((i = 1; i <= nn; i++)); do start_node "$i"; done
	log "waiting for every node OK and every public address held"
	if ! wait_for 180 cluster_healthy "$nn"; then
		ctdb_on 1 status >&2 || true
		die "cluster not healthy after 180 s (logs: $CL/node*/console.log)"
	fi
	check_volfile_addresses "$VOLUME"
	check_volfile_addresses "$LOCK_VOLUME"
	for ((i = 1; i <= nn; i++)); do set_smb_passwords "$i"; done
	for ((i = 1; i <= nn; i++)); do
		wait_for 60 smb_answers "$(node_ip "$i")" ||
			die "node $i: smbd does not answer on $(node_ip "$i"):$SMB_PORT"
		wait_for 60 smb_answers "$(public_ip "$i")" ||
			die "public address $(public_ip "$i") does not answer on port $SMB_PORT"
	done
	state_set UP 1
	log "up: $nn nodes ($(for ((i = 1; i <= nn; i++)); do printf '%s ' "$(node_ip "$i")"; done)), public addresses" \
		"$(for ((i = 1; i <= nn; i++)); do printf '%s ' "$(public_ip "$i")"; done)"
}
