# shellcheck shell=bash
# test/lib/cluster/down.sh: test/cluster down.
# Sourced by test/cluster.

cmd_down() {
	need_root
	local i
	for ((i = MAX_NODES; i >= 1; i--)); do stop_node "$i"; done
	for ((i = 1; i <= MAX_NODES; i++)); do delete_ns "$i"; done
	delete_bridge
	unmount_fuse
	if glusterd_answers; then
		delete_volume "$VOLUME"
		delete_volume "$LOCK_VOLUME"
	fi
	state_set UP 0
	state_set BRICK_HOST ""
	rm -f "$(share_options_file)"
	log "down"
}
