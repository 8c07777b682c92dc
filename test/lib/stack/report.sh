# shellcheck shell=bash
# test/lib/stack/report.sh: `test/stack env` and `test/stack status`.
# Sourced by test/stack (after common.sh).

cmd_env() {
	if [ ! -f "$STATE" ] || [ "$(state_get UP)" != 1 ]; then
		echo "stack is not up: run test/stack up" >&2
		exit 1
	fi
	local k v vfs_module=$MODULE sanitize="" asan_reports="" base
	if [ "$(state_get ASAN 0)" = 1 ]; then
		vfs_module=$ASAN_MODULE sanitize=address,undefined asan_reports=$ASAN_REPORTS
	fi
	while read -r k v; do
		printf '%s=%s\n' "$k" "$(q "$v")"
	done <<EOF
SMB_HOST $SMB_HOST
SMB_PORT $(state_get SMB_PORT "$DEFAULT_PORT")
SMB_USER $USER1
SMB_PASS $PASS1
SMB_USER2 $USER2
SMB_PASS2 $PASS2
SMB_GROUP $GROUP
GLUSTER_VOLUME $(state_get GLUSTER_VOLUME)
GLUSTER_HOST $(host_name)
FUSE_MOUNT $FUSE
LOCAL_DIR $LOCAL
SMB_CONF $CONF
SMB_LOGDIR $SMBDIR
STACK_DIR $STACK
BRICK_DIRS $(state_get BRICK_DIRS)
SHARES $SHARES
GLUSTERFS2_MODULE $(module_path)
MODULE_STATE $(module_state)
VFS_MODULE $vfs_module
SANITIZE $sanitize
ASAN_REPORTS $asan_reports
ASAN_MODULE $ASAN_MODULE
EOF
	base=$(state_get BASELINE_MODULE)
	if [ -n "$base" ]; then
		printf '%s=%s\n' BASELINE_SHARE "$(q "$BASE_SHARE")" \
			BASELINE_WCACHE_SHARE "$(q "$BASE_WC_SHARE")" \
			BASELINE_MODULE "$(q "$base")"
	fi
	if [ -n "$SMBD_PREFIX" ]; then
		printf '%s=%s\n' SMBD_PREFIX "$(q "$SMBD_PREFIX")"
	fi
	if [ -n "$RTT_MODE" ]; then
		printf '%s=%s\n' RTT_MS "$(q "$RTT_MODE")" \
			RTT_NETNS "$(q "$RTT_NETNS")" \
			RTT_EXEC "$(q "$RTT_EXEC")" \
			RTT_HOST_ADDR "$(q "$RTT_HOST_ADDR")"
	fi
}

cmd_status() {
	local rc=0 pid vol src s shares=$SHARES base
	base=$(state_get BASELINE_MODULE)
	if [ -n "$base" ]; then shares="$shares $BASE_SHARE $BASE_WC_SHARE"; fi
	if [ -f "$STATE" ]; then
		echo "state ($STATE):"
		sed 's/^/    /' "$STATE"
	else
		echo "state: none (stack not up)"
	fi
	pid=$(glusterd_pid || true)
	if [ -n "$pid" ]; then
		echo "glusterd: running, pid $pid (started by this stack: $(state_get STARTED_GLUSTERD 0))"
	else
		echo "glusterd: not running"
	fi
	if [ -n "$pid" ] && glusterd_answers; then
		for vol in $OUR_VOLUMES; do
			if volume_exists "$vol"; then
				echo "volume $vol: $(gl volume info "$vol" | sed -n 's/^Status: //p'), bricks online: $(volume_bricks_online "$vol" && echo yes || echo no)"
			fi
		done
	fi
	src=$(fuse_source)
	echo "FUSE mount $FUSE: ${src:-not mounted}"
	if [ -n "$RTT_MODE" ]; then
		pid=$(rtt_relay_pid || true)
		echo "round trip: $RTT_MODE ms between the head (namespace $RTT_NETNS, $RTT_NS_ADDR) and the bricks; delay relay: ${pid:-NOT RUNNING}"
		[ -n "$pid" ] || rc=1
	fi
	pid=$(smbd_main_pid || true)
	if [ -n "$pid" ]; then
		echo "smbd: running, pid $pid, port $(state_get SMB_PORT "$DEFAULT_PORT"), processes: $(smbd_pids | tr '\n' ' ')"
		local res
		# shellcheck disable=SC2086
		res=$(check_shares $shares)
		for s in $shares; do
			if grep -qx "$s OK" <<<"$res"; then
				echo "    share [$s]: OK"
			else
				echo "    share [$s]: FAIL"
				rc=1
			fi
		done
	else
		echo "smbd: not running"
		[ ! -f "$STATE" ] || rc=1
	fi
	echo "module $(module_path): $(module_state)"
	if [ -n "$base" ]; then
		local bmod
		bmod="$(modules_dir)/vfs/$base.so"
		echo "baseline module of [$BASE_SHARE]: $bmod ($([ -f "$bmod" ] && echo installed || echo missing))"
	fi
	if [ "$(state_get ASAN 0)" = 1 ]; then
		echo "sanitizer mode: shares load $ASAN_MODULE, reports in $ASAN_REPORTS ($(find "$ASAN_REPORTS" -maxdepth 1 -type f 2>/dev/null | wc -l) files)"
	fi
	return $rc
}
