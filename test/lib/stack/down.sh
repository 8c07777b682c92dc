# shellcheck shell=bash
# test/lib/stack/down.sh: `test/stack down`.
# Sourced by test/stack (after common.sh).

cmd_down() {
	local purge=0
	while [ $# -gt 0 ]; do
		case $1 in
		--purge) purge=1 ;;
		*) die "down: unknown option '$1' (usage: test/stack down [--purge])" ;;
		esac
		shift
	done
	need_root
	if [ ! -d "$STACK" ]; then
		log "nothing to do (no $STACK)"
		return 0
	fi
	take_lock

	# smbd
	stop_smbd

	# FUSE
	if [ -n "$(fuse_source)" ]; then
		log "unmounting $FUSE"
		unmount_fuse
	fi

	# volumes
	local vol pids started
	if [ -n "$(glusterd_pid)" ] && glusterd_answers; then
		for vol in $OUR_VOLUMES; do
			if volume_exists "$vol"; then
				if volume_is_ours_or_stale "$vol"; then
					delete_volume "$vol"
				else
					log "volume $vol has bricks outside $BRICKROOT: not ours, left alone"
				fi
			fi
		done
	elif [ -d "$BRICKROOT" ]; then
		warn "glusterd is not running: cannot delete the test volume definitions;" \
			"the next 'up' recreates them"
	fi

	# Stragglers serving our bricks/mount (brick daemons, self-heal, client)
	pids=$(our_gluster_pids | tr '\n' ' ')
	if [ -n "${pids// /}" ]; then
		log "stopping gluster processes of the test volume(s): $pids"
		# shellcheck disable=SC2086
		kill_pids gluster $pids
	fi
	# the network of up --rtt (relay, veth, namespace)
	if [ -n "$(state_get RTT_MS)" ] || [ -e "/run/netns/$RTT_NETNS" ]; then
		rtt_down
	fi
	if [ -d "$BRICKROOT" ]; then
		log "removing bricks $BRICKROOT"
		rm -rf "${BRICKROOT:?}"
	fi

	# glusterd: stopped by the last of its users, if a test/stack up
	# started it (this stack's or another's); left running while any
	# volume exists (another stack's, a cluster's) or a process registered
	# in GLUSTERD_USERS runs.  Under the machine's stack lock, after our
	# volumes went: of two stacks going down together the second sees
	# neither's volume.
	take_host_lock
	started=$(state_get STARTED_GLUSTERD 0)
	if [ "$started" = 1 ] || glusterd_started_by_a_stack; then
		local others="" users=""
		pids=$(host_pgrep -x glusterd | tr '\n' ' ')
		if [ -n "${pids// /}" ] && glusterd_answers; then
			others=$(gl volume list 2>/dev/null | grep -v '^No volumes present' | tr '\n' ' ' || true)
		fi
		users=$(glusterd_users | tr '\n' ' ')
		if [ -n "${others// /}" ]; then
			log "leaving glusterd running (started by test/stack up, but it serves other volumes: $others)"
		elif [ -n "${users// /}" ]; then
			log "leaving glusterd running (started by test/stack up, but in use by: $users)"
		elif [ -n "${pids// /}" ]; then
			log "stopping glusterd ($pids), which test/stack up had started"
			# shellcheck disable=SC2086
			kill_pids glusterd $pids
			rm -f "$GLUSTERD_MARK"
		fi
	fi
	drop_host_lock

	rm -rf "${LOCAL:?}"
	rmdir "$FUSE" 2>/dev/null || true
	rm -f "$STATE"

	if [ "$purge" = 1 ]; then
		delete_users
		exec 9>&-
		rm -rf "${STACK:?}"
	fi
	log "down"
}
