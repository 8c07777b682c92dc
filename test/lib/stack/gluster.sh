# shellcheck shell=bash
# test/lib/stack/gluster.sh: glusterd, the test volumes and their bricks,
# the FUSE mount; which Gluster processes and volumes are this stack's.
# Sourced by test/stack (after common.sh).

# gluster CLI, non-interactive and bounded.
gl() {
	timeout 150 gluster --mode=script "$@"
}

# pgrep for the host's own processes: those of the test platforms'
# root file systems (test/platform/root) share the PID namespace but not
# the root directory, and are never this stack's.
host_pgrep() {
	local pid
	for pid in $(pgrep "$@" 2>/dev/null || true); do
		same_root "$pid" && echo "$pid"
	done
	return 0
}

glusterd_pid() {
	host_pgrep -x glusterd | head -n 1
}

glusterd_answers() {
	timeout 20 gluster --mode=script volume list >/dev/null 2>&1
}

# Gluster processes serving this stack: brick daemons of bricks under our
# brick root, the FUSE client of our mount point, the self-heal daemon of our
# volume (by name, from the state: a volume name is only ever ours in one
# checkout, the other checkout's `up` refuses it).
our_gluster_pids() {
	local pid exe cmd v
	v=$(state_get GLUSTER_VOLUME)
	for pid in $(host_pgrep -x 'glusterfs|glusterfsd'); do
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
		case $exe in
		*/glusterfs | */glusterfsd) ;;
		*) continue ;;
		esac
		cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null || true)
		if [[ $cmd == *" --brick-name $BRICKROOT/"* || $cmd == *" $FUSE" ||
			$cmd == *" $FUSE "* ]]; then
			echo "$pid"
		elif [ -n "$v" ] && [[ $cmd == *"--volfile-id shd/$v "* ]]; then
			echo "$pid"
		fi
	done
}

volume_exists() {
	gl volume info "$1" >/dev/null 2>&1
}

volume_bricks() { # VOL -> host:path lines
	gl volume info "$1" | sed -n 's/^Brick[0-9][0-9]*: //p'
}

# A brick of another checkout's stack whose smbd is not running: that
# stack was left behind (stopped without `down`), not in use.
brick_of_dead_stack() { # BRICKPATH
	local path=$1 other pid
	# a stack's directory: CHECKOUT/.stack, or GF2_STACK_DIR's (a second
	# stack of a checkout, .stack-NAME in CI)
	case $path in
	*/.stack/bricks/* | */.stack-*/bricks/*) other=${path%/bricks/*} ;;
	*) return 1 ;;
	esac
	for pidfile in "$other"/smb/run/smbd*.pid; do
		[ -f "$pidfile" ] || continue
		pid=$(head -n 1 "$pidfile" 2>/dev/null)
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
			return 1
		fi
	done
	return 0
}

# Is volume VOL one of ours (all bricks under our brick root), or stale
# (every brick directory is gone)?  A volume of that name whose bricks exist
# elsewhere belongs to somebody else: leave it alone.
volume_is_ours_or_stale() {
	local vol=$1 b path ours=1 gone=1
	while read -r b; do
		[ -n "$b" ] || continue
		path=${b#*:}
		case $path in
		"$BRICKROOT"/*) ;;
		*) brick_of_dead_stack "$path" || ours=0 ;;
		esac
		if [ -e "$path" ]; then gone=0; fi
	done < <(volume_bricks "$vol")
	[ "$ours" = 1 ] || [ "$gone" = 1 ]
}

delete_volume() {
	local vol=$1
	log "deleting volume $vol"
	gl volume stop "$vol" force >/dev/null 2>&1 || true
	gl volume delete "$vol" >/dev/null ||
		die "could not delete volume $vol (gluster volume delete $vol)"
}

hex_volume_id() { # DIR -> volume-id xattr in hex without 0x, or empty
	getfattr --absolute-names -n trusted.glusterfs.volume-id -e hex "$1" 2>/dev/null |
		sed -n 's/^trusted.glusterfs.volume-id=0x//p'
}

# Every brick of VOL is online?  (XML: the text table wraps long paths.)
volume_bricks_online() {
	local vol=$1 xml nb
	nb=$(volume_bricks "$vol" | grep -c .) || return 1
	xml=$(gl volume status "$vol" --xml 2>/dev/null) || return 1
	printf '%s' "$xml" | /usr/bin/python3 -c '
import sys, xml.etree.ElementTree as ET
want = int(sys.argv[1])
nodes = [n for n in ET.parse(sys.stdin).getroot().iter("node")
         if (n.findtext("path") or "").startswith("/")]
sys.exit(0 if len(nodes) == want and all(n.findtext("status") == "1" for n in nodes) else 1)
' "$nb"
}

ensure_glusterd() {
	if glusterd_answers; then
		return 0
	fi
	if [ -z "$(glusterd_pid)" ]; then
		log "starting glusterd"
		glusterd 8>&- 9>&- || die "glusterd failed to start (see /var/log/glusterfs/glusterd.log)"
		state_set STARTED_GLUSTERD 1
	fi
	if ! wait_for 60 "glusterd" glusterd_answers; then
		tail -n 20 /var/log/glusterfs/glusterd.log >&2 2>/dev/null || true
		die "glusterd does not answer 'gluster volume list' after 60 s"
	fi
	if [ "$(state_get STARTED_GLUSTERD 0)" = 1 ]; then
		state_set GLUSTERD_PID "$(glusterd_pid)"
		# for every stack: the last one down stops it
		mkdir -p "$HOST_SHARED"
		glusterd_pid > "$GLUSTERD_MARK"
	fi
}

# Did a test/stack up start the glusterd running now (this stack's or
# another's)?  By the pid it recorded.
glusterd_started_by_a_stack() {
	local mark pid
	mark=$(head -n 1 "$GLUSTERD_MARK" 2>/dev/null | tr -dc '0-9')
	pid=$(glusterd_pid)
	[ -n "$mark" ] && [ "$mark" = "$pid" ]
}

# The live processes registered in GLUSTERD_USERS (stale entries, of
# processes gone, are removed): "PID (what it wrote)" lines.
glusterd_users() {
	local f pid
	for f in "$GLUSTERD_USERS"/*; do
		[ -f "$f" ] || continue
		pid=${f##*/}
		case $pid in
		*[!0-9]* | "") continue ;;
		esac
		if kill -0 "$pid" 2>/dev/null; then
			echo "$pid ($(head -c 200 "$f" | head -n 1))"
		else
			rm -f "$f"
		fi
	done
}

ensure_volume() { # VOL NBRICKS REPLICA (0: distribute; 3 with 6 bricks: 2 x 3)
	local vol=$1 n=$2 rep=$3 host i want have vid b path recreate=0
	host=$(host_name)
	local bricks=()
	for ((i = 1; i <= n; i++)); do bricks+=("$host:$BRICKROOT/$vol/b$i"); done
	want=$(printf '%s\n' "${bricks[@]}")

	if volume_exists "$vol"; then
		have=$(volume_bricks "$vol")
		if [ "$have" != "$want" ]; then
			if volume_is_ours_or_stale "$vol"; then
				log "volume $vol exists with other bricks (stale): recreating"
				recreate=1
			else
				die "volume $vol exists with bricks outside $BRICKROOT:" \
					"$(printf "%s " $have)" "-- another checkout's stack? Run its 'test/stack down'" \
					"or delete the volume (gluster volume stop/delete $vol)"
			fi
		else
			vid=$(gl volume info "$vol" | sed -n 's/^Volume ID: //p' | tr -d '-')
			for b in "${bricks[@]}"; do
				path=${b#*:}
				if [ "$(hex_volume_id "$path")" != "$vid" ]; then
					log "brick $path missing or not of volume $vol: recreating $vol"
					recreate=1
					break
				fi
			done
		fi
		if [ "$recreate" = 1 ]; then
			delete_volume "$vol"
		fi
	fi

	if ! volume_exists "$vol"; then
		local kind=distribute
		if [ "$rep" -gt 0 ] && [ "$n" = "$rep" ]; then kind="replica $n"; fi
		if [ "$rep" -gt 0 ] && [ "$n" != "$rep" ]; then
			kind="distributed-replicate $((n / rep)) x $rep"
		fi
		log "creating volume $vol ($kind, $n bricks)"
		rm -rf "${BRICKROOT:?}/$vol"
		for b in "${bricks[@]}"; do mkdir -p "${b#*:}"; done
		if [ "$rep" -gt 0 ]; then
			gl volume create "$vol" replica "$rep" "${bricks[@]}" force >/dev/null ||
				die "gluster volume create $vol failed"
		else
			gl volume create "$vol" "${bricks[@]}" force >/dev/null ||
				die "gluster volume create $vol failed"
		fi
	fi

	# Samba's docs for gfapi access: allow clients on unprivileged ports.
	if ! gl volume get "$vol" server.allow-insecure 2>/dev/null |
		grep -q 'server.allow-insecure *on'; then
		gl volume set "$vol" server.allow-insecure on >/dev/null ||
			die "gluster volume set $vol server.allow-insecure on failed"
	fi

	if ! grep -q '^Status: Started' <<<"$(gl volume info "$vol")"; then
		log "starting volume $vol"
		gl volume start "$vol" >/dev/null || die "gluster volume start $vol failed"
	fi
	if ! volume_bricks_online "$vol"; then
		log "some bricks of $vol are offline: gluster volume start $vol force"
		gl volume start "$vol" force >/dev/null || die "gluster volume start $vol force failed"
	fi
	if ! wait_for 60 "bricks" volume_bricks_online "$vol"; then
		gl volume status "$vol" >&2 || true
		die "bricks of $vol not online after 60 s"
	fi
}

# The volumes the running glusterd serves, on one line (nothing when
# glusterd is not running).  Status 1 when glusterd runs but does not
# answer: whether it serves any is not known.
volumes_served() {
	[ -n "$(glusterd_pid)" ] || return 0
	glusterd_answers || return 1
	gl volume list 2>/dev/null | grep -v '^No volumes present' | tr '\n' ' ' || true
}

# down: glusterd stopped by the last of its users, if a test/stack up
# started it (this stack's, by the state, or another's, by GLUSTERD_MARK);
# left running while any volume exists (another stack's, a cluster's) or
# a process registered in GLUSTERD_USERS runs.  Called under the host lock,
# after this stack's volumes went: of two stacks going down together the
# second sees neither's volume.
stop_glusterd_if_last() {
	local started pids others="" users=""
	started=$(state_get STARTED_GLUSTERD 0)
	if [ "$started" != 1 ] && ! glusterd_started_by_a_stack; then
		return 0
	fi
	pids=$(host_pgrep -x glusterd | tr '\n' ' ')
	if [ -n "${pids// /}" ] && ! others=$(volumes_served); then
		# busy or hung: it may serve another stack's volumes, which
		# not knowing is no reason to stop
		log "leaving glusterd running ($pids): it does not answer, so whether it serves other volumes is not known"
		return 0
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
}

fuse_source() {
	{ findmnt -n -o SOURCE --mountpoint "$FUSE" 2>/dev/null || true; } | head -n 1
}

unmount_fuse() {
	local i
	for ((i = 0; i < 5; i++)); do
		[ -n "$(fuse_source)" ] || return 0
		umount "$FUSE" 2>/dev/null || umount -l "$FUSE" 2>/dev/null || true
		sleep 0.5
	done
	[ -z "$(fuse_source)" ] || warn "could not unmount $FUSE"
}

ensure_fuse() {
	local vol=$1 src want
	want="$(host_name):/$vol"
	src=$(fuse_source)
	if [ -n "$src" ]; then
		if [ "$src" != "$want" ]; then
			log "FUSE mount is $src, not $want: remounting"
			unmount_fuse
		elif ! wait_for 10 "FUSE mount" timeout 10 stat "$FUSE/."; then
			# e.g. "Transport endpoint is not connected" after brick restarts
			log "FUSE mount $FUSE is stale: remounting"
			unmount_fuse
		fi
	fi
	if [ -z "$(fuse_source)" ]; then
		mkdir -p "$FUSE"
		log "mounting $want on $FUSE"
		in_head timeout 120 mount -t glusterfs "$want" "$FUSE" 8>&- 9>&- ||
			die "mount -t glusterfs $want $FUSE failed (see /var/log/glusterfs/)"
	fi
	wait_for 30 "FUSE mount" timeout 10 stat "$FUSE/." ||
		die "FUSE mount $FUSE does not answer"
	# The volume root must be writable by both test users.
	chmod 1777 "$FUSE"
}
