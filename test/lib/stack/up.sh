# shellcheck shell=bash
# test/lib/stack/up.sh: `test/stack up`.
# Sourced by test/stack (after common.sh).

cmd_up() {
	local replica=0 port=$DEFAULT_PORT build=1 asan=0 rtt=""
	local base=${GF2_STACK_BASELINE_MODULE:-}
	local prefix=${GF2_STACK_SMBD_PREFIX:-}
	case ${GF2_STACK_ASAN:-0} in
	0 | "" | no | false) ;;
	*) asan=1 ;;
	esac
	while [ $# -gt 0 ]; do
		case $1 in
		--replica3) replica=1 ;;
		--dist-replica3) replica=2 ;;
		--asan) asan=1 ;;
		--port)
			[ $# -ge 2 ] || die "--port needs a value"
			port=$2
			shift
			;;
		--port=*) port=${1#--port=} ;;
		--no-build) build=0 ;;
		--baseline-module)
			[ $# -ge 2 ] || die "--baseline-module needs a module name"
			base=$2
			shift
			;;
		--baseline-module=*) base=${1#--baseline-module=} ;;
		--smbd-prefix)
			[ $# -ge 2 ] || die "--smbd-prefix needs a directory"
			prefix=$2
			shift
			;;
		--smbd-prefix=*) prefix=${1#--smbd-prefix=} ;;
		--rtt)
			[ $# -ge 2 ] || die "--rtt needs a round trip in milliseconds"
			rtt=$2
			shift
			;;
		--rtt=*) rtt=${1#--rtt=} ;;
		*) die "up: unknown option '$1' (usage: test/stack up [--replica3 | --dist-replica3] [--port N] [--no-build] [--asan] [--baseline-module NAME] [--smbd-prefix DIR] [--rtt MS])" ;;
		esac
		shift
	done
	[[ $port =~ ^[0-9]+$ ]] && [ "$port" -gt 0 ] && [ "$port" -lt 65536 ] ||
		die "bad port '$port'"
	if [ -n "$base" ]; then
		[[ $base =~ ^[A-Za-z0-9_]+$ ]] ||
			die "bad --baseline-module '$base' (a module name: letters, digits and _)"
		[ "$base" != glusterfs2 ] ||
			die "--baseline-module glusterfs2 is the module of [glusterfs2] itself (test/bench/baseline REV builds glusterfs2_base)"
	fi
	if [ -n "$prefix" ]; then
		prefix=${prefix%/}
		[[ $prefix =~ ^/[A-Za-z0-9._/+-]+$ ]] ||
			die "bad --smbd-prefix '$prefix' (an absolute path, no spaces)"
		[ -x "$prefix/sbin/smbd" ] || die "--smbd-prefix $prefix: no $prefix/sbin/smbd"
	fi
	if [ -n "$rtt" ]; then
		rtt_valid "$rtt" || die "bad --rtt '$rtt' (milliseconds, more than 0 and at most 1000, e.g. 0.2)"
	fi
	need_root
	use_smbd_prefix "$prefix"
	local vol=$VOL_DIST n=2
	local repcount=0
	if [ "$replica" = 1 ]; then vol=$VOL_REP3 n=3 repcount=3; fi
	if [ "$replica" = 2 ]; then vol=$VOL_DREP3 n=6 repcount=3; fi

	mkdir -p "$STACK"
	chmod 755 "$STACK"
	take_lock

	# 1. packages
	if [ -x "$ROOT/scripts/install-deps" ]; then
		# Retried: somebody else's apt-get may hold the dpkg lock for a while.
		local try
		for try in 1 2 3 4 5 6; do
			if "$ROOT/scripts/install-deps"; then break; fi
			[ "$try" != 6 ] || die "scripts/install-deps failed"
			warn "scripts/install-deps failed (attempt $try/6); retrying in 20 s"
			sleep 20
		done
	else
		warn "scripts/install-deps not found; assuming packages are installed"
	fi
	local c
	for c in gluster glusterd smbd smbclient smbpasswd mount.glusterfs getfattr ss; do
		command -v "$c" >/dev/null || die "'$c' not found (run scripts/install-deps)"
	done

	if [ -n "$prefix" ] && [ ! -f "$prefix/etc/smb.conf" ]; then
		# the tools of that Samba read it when no -s is given
		log "writing $prefix/etc/smb.conf (the default configuration of $prefix's tools)"
		mkdir -p "$prefix/etc"
		printf '%s\n' "# Written by test/stack up --smbd-prefix: what this Samba's tools" \
			"# read when no -s is given (the stack's smbd has its own smb.conf)." \
			"[global]" "	server role = standalone server" > "$prefix/etc/smb.conf"
	fi
	check_hostname
	state_set UP 0
	state_set STACK_DIR "$STACK"

	# 2. glusterd (under the machine's stack lock until our volume exists:
	# a `down` of another stack stops glusterd when it serves no volume)
	take_host_lock
	ensure_glusterd

	# 3. the test volume; the other test volume of this stack goes away.
	local other
	for other in $OUR_VOLUMES; do
		[ "$other" != "$vol" ] || continue
		if volume_exists "$other" && volume_is_ours_or_stale "$other"; then
			if [ "$(fuse_source)" = "$(host_name):/$other" ]; then unmount_fuse; fi
			delete_volume "$other"
			rm -rf "${BRICKROOT:?}/$other"
		fi
	done
	ensure_volume "$vol" "$n" "$repcount"
	drop_host_lock
	state_set GLUSTER_VOLUME "$vol"
	state_set BRICK_DIRS "$(for ((i = 1; i <= n; i++)); do printf '%s ' "$BRICKROOT/$vol/b$i"; done | sed 's/ $//')"

	# 3b. the network between the head and the bricks (up --rtt MS): the
	# head moves into the namespace or out of it when the mode or the
	# round trip changes
	local rtt_was
	rtt_was=$(state_get RTT_MS)
	if [ "$rtt_was" != "$rtt" ]; then
		stop_smbd
		if [ -n "$(fuse_source)" ]; then unmount_fuse; fi
	fi
	if [ -n "$rtt" ]; then
		rtt_up "$rtt"
		state_set RTT_MS "$rtt"
		use_rtt "$rtt"
	elif [ -n "$rtt_was" ] || [ -e "/run/netns/$RTT_NETNS" ]; then
		rtt_down
	fi

	# 4. FUSE mount (also makes the volume root writable by the users)
	ensure_fuse "$vol"
	mkdir -p "$LOCAL"
	chmod 1777 "$LOCAL"

	# 6./7. users, smb.conf, passdb
	take_host_lock
	ensure_users
	drop_host_lock
	local conf_changed
	conf_changed=$(write_smb_conf "$vol" "$port" "$asan" "$base")
	if [ -n "$base" ]; then
		state_set BASELINE_MODULE "$base"
	else
		state_unset BASELINE_MODULE
	fi
	if [ -n "$base" ] && [ ! -f "$(modules_dir)/vfs/$base.so" ]; then
		warn "baseline module $(modules_dir)/vfs/$base.so is not installed" \
			"(test/bench/baseline REV): [$BASE_SHARE] will fail tree connects"
	fi
	ensure_smb_passwords

	# 5. the module
	local mod_installed=""
	if [ "$build" = 1 ]; then
		mod_installed=$(ensure_module)
	fi
	state_set MODULE_STATE "$(module_state)"
	if [ "$asan" = 1 ]; then
		mkdir -p "$ASAN_REPORTS"
		# smbd processes write their reports as the SMB user
		chmod 1777 "$ASAN_REPORTS"
		local asan_installed
		asan_installed=$(ensure_asan_module) || die "sanitizer module not installed"
		if [ -n "$asan_installed" ]; then mod_installed=1; fi
	fi

	# 7. smbd
	local pid lpids ours
	lpids=$(port_listeners "$port" | { grep -o 'pid=[0-9]*' || true; } | cut -d= -f2 | sort -u)
	if [ -n "$(port_listeners "$port")" ]; then
		ours=$(smbd_pids)
		for pid in $lpids; do
			grep -qx "$pid" <<<"$ours" ||
				die "port $port is in use by another process: $(port_listeners "$port") -- use --port N"
		done
		[ -n "$lpids" ] || die "port $port is in use: $(port_listeners "$port") -- use --port N"
	fi
	pid=$(smbd_main_pid || true)
	if [ -n "$pid" ] && { [ -n "$conf_changed" ] || [ -n "$mod_installed" ] ||
		[ "$(state_get SMB_PORT)" != "$port" ] ||
		[ "$(state_get ASAN 0)" != "$asan" ] ||
		[ "$(state_get SMBD_PREFIX)" != "$prefix" ]; }; then
		log "restarting private smbd (configuration or module changed)"
		stop_smbd
		pid=""
	fi
	local smbd_started=0
	if [ -z "$pid" ]; then
		stop_smbd # leftovers (children, rpc helpers) of a dead smbd
		state_set ASAN "$asan"
		if [ -n "$prefix" ]; then
			state_set SMBD_PREFIX "$prefix"
		else
			state_unset SMBD_PREFIX
		fi
		start_smbd "$port" "$asan"
		smbd_started=1
	fi
	state_set SMB_PORT "$port"
	wait_smbd "$port"
	state_set UP 1

	# Report the gluster-backed shares (warnings only), when smbd was
	# (re)started.  In parallel: a tree disconnect from a gfapi share takes
	# ~10 s (glfs_fini), so each check costs ~11 s.
	if [ "$smbd_started" = 1 ]; then
		local s res
		local checked="glusterfs fuse glusterfs2${base:+ $BASE_SHARE}"
		# shellcheck disable=SC2086
		res=$(check_shares $checked)
		for s in $checked; do
			if ! grep -qx "$s OK" <<<"$res"; then
				if [ "$s" = glusterfs2 ]; then
					warn "share [glusterfs2] does not answer (module $(state_get MODULE_STATE));" \
						"see $SMBDIR/log.* and $SMBDIR/glusterfs2-*.log"
				else
					warn "share [$s] does not answer; see $SMBDIR/log.*"
				fi
			fi
		done
	fi
	local modetxt=""
	if [ "$asan" = 1 ]; then modetxt=" (sanitizer mode: $ASAN_MODULE, reports in $ASAN_REPORTS)"; fi
	if [ -n "$prefix" ]; then modetxt="$modetxt (smbd $prefix/sbin/smbd)"; fi
	if [ -n "$rtt" ]; then modetxt="$modetxt (round trip $rtt ms between the head in $RTT_NETNS and the bricks)"; fi
	log "up: volume $vol, smbd on $SMB_HOST:$port${LISTEN:+ (and $LISTEN)}, shares: $SHARES${base:+ $BASE_SHARE ($base)}$modetxt (test/stack env)"
}
