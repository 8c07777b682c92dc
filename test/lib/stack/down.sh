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
	local vol pids
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

	# glusterd: stopped by the last of its users, if a stack started it
	take_host_lock
	stop_glusterd_if_last
	drop_host_lock

	rm -rf "${LOCAL:?}"
	rmdir "$FUSE" 2>/dev/null || true
	rm -f "$STATE"

	if [ "$purge" = 1 ]; then
		# the users are every stack's: kept while glusterd serves any
		# volume (another stack's)
		take_host_lock
		local left
		if ! left=$(volumes_served); then
			log "keeping the test users (glusterd runs but does not answer)"
		elif [ -n "${left// /}" ]; then
			log "keeping the test users (glusterd serves other volumes: $left)"
		else
			delete_users
		fi
		drop_host_lock
		exec 9>&-
		rm -rf "${STACK:?}"
	fi
	log "down"
}
