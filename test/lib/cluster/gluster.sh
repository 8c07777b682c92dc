# shellcheck shell=bash
# test/lib/cluster/gluster.sh: the cluster's two replica-3 volumes on the
# host's glusterd, bricks named by the bridge address (what the nodes
# reach), and the host's FUSE mount of the data volume.
# Sourced by test/cluster (after common.sh).

glusterd_answers() { timeout 20 gluster --mode=script volume list >/dev/null 2>&1; }

volume_exists() { gl volume info "$1" >/dev/null 2>&1; }

volume_bricks() { gl volume info "$1" | sed -n 's/^Brick[0-9][0-9]*: //p'; }

volume_bricks_online() { # VOL
	local xml
	xml=$(gl volume status "$1" --xml 2>/dev/null) || return 1
	printf '%s' "$xml" | /usr/bin/python3 -c '
import sys, xml.etree.ElementTree as ET
nodes = [n for n in ET.parse(sys.stdin).getroot().iter("node")
         if (n.findtext("path") or "").startswith("/")]
sys.exit(0 if len(nodes) == 3 and all(n.findtext("status") == "1" for n in nodes) else 1)
'
}

# The host name the bricks are created with: the bridge address, or when
# glusterd does not count that address as its own (it can miss an address
# that appeared after it started: "Host ... is not in 'Peer in Cluster'
# state"), the host's name, which every node resolves to the bridge
# address through its own /etc/hosts (node-init.sh).
brick_host() { state_get BRICK_HOST "$HOST_IP"; }

create_volume() { # VOL HOST
	local vol=$1 host=$2 i
	local bricks=()
	for i in 1 2 3; do bricks+=("$host:$BRICKROOT/$vol/b$i"); done
	gl volume create "$vol" replica 3 "${bricks[@]}" force 2>&1
}

ensure_volume() { # VOL OPTION=VALUE...
	local vol=$1 b out
	shift
	if volume_exists "$vol"; then
		for b in $(volume_bricks "$vol"); do
			case ${b#*:} in
			"$BRICKROOT/$vol"/b[123]) ;;
			*) die "volume $vol exists with brick $b: not ours, left alone" ;;
			esac
		done
		state_set BRICK_HOST "$(volume_bricks "$vol" | head -n 1 | cut -d: -f1)"
	else
		rm -rf "${BRICKROOT:?}/$vol"
		mkdir -p "$BRICKROOT/$vol"/b1 "$BRICKROOT/$vol"/b2 "$BRICKROOT/$vol"/b3
		log "creating volume $vol (replica 3, bricks $(brick_host):$BRICKROOT/$vol/b1..3)"
		if ! out=$(create_volume "$vol" "$(brick_host)"); then
			if grep -q 'Peer in Cluster' <<<"$out" && [ "$(brick_host)" = "$HOST_IP" ]; then
				warn "glusterd does not count $HOST_IP as its own address; bricks named" \
					"$(hostname) instead (every node resolves it to $HOST_IP)"
				state_set BRICK_HOST "$(hostname)"
				out=$(create_volume "$vol" "$(brick_host)") ||
					{ echo "$out" >&2; die "gluster volume create $vol failed"; }
			else
				echo "$out" >&2
				die "gluster volume create $vol failed"
			fi
		fi
	fi
	local kv
	for kv in server.allow-insecure=on "$@"; do
		gl volume set "$vol" "${kv%%=*}" "${kv#*=}" >/dev/null ||
			die "gluster volume set $vol ${kv%%=*} ${kv#*=} failed"
	done
	if ! grep -q '^Status: Started' <<<"$(gl volume info "$vol")"; then
		gl volume start "$vol" >/dev/null || die "gluster volume start $vol failed"
	fi
	if ! volume_bricks_online "$vol"; then
		gl volume start "$vol" force >/dev/null || true
	fi
	wait_for 60 volume_bricks_online "$vol" || die "bricks of $vol not online after 60 s"
}

# Every brick host in the volfile a client fetches must be one the nodes
# reach: inside node 1 it must resolve to the bridge address, never to a
# loopback address.  Run once the nodes are up.
check_volfile_addresses() { # VOL
	local vol=$1 spec hosts h a
	spec=$(on_node 1 timeout 30 gluster --remote-host="$HOST_IP" \
		system:: getspec "$vol" 2>/dev/null) ||
		spec=$(cat /var/lib/glusterd/vols/"$vol"/"$vol".tcp-fuse.vol 2>/dev/null) ||
		die "no client volfile for $vol"
	hosts=$(printf '%s\n' "$spec" | sed -n 's/^ *option remote-host //p' | sort -u)
	[ -n "$hosts" ] || die "the volfile of $vol names no brick host"
	for h in $hosts; do
		a=$(on_node 1 getent ahostsv4 "$h" | awk '{print $1; exit}')
		[ "$a" = "$HOST_IP" ] ||
			die "the volfile of $vol names brick host '$h', which node 1 resolves to '$a', not $HOST_IP"
	done
}

delete_volume() { # VOL (ours only: every brick under our brick root)
	local vol=$1 b
	volume_exists "$vol" || return 0
	for b in $(volume_bricks "$vol"); do
		case ${b#*:} in
		"$BRICKROOT"/*) ;;
		*) warn "volume $vol has brick $b outside $BRICKROOT: not ours, left alone"; return 0 ;;
		esac
	done
	log "deleting volume $vol"
	gl volume stop "$vol" force >/dev/null 2>&1 || true
	gl volume delete "$vol" >/dev/null || warn "could not delete volume $vol"
	rm -rf "${BRICKROOT:?}/$vol"
}

fuse_mounted() { findmnt -n --mountpoint "$FUSE" >/dev/null 2>&1; }

ensure_fuse() {
	if fuse_mounted && ! timeout 10 stat "$FUSE/." >/dev/null 2>&1; then
		umount -l "$FUSE" 2>/dev/null || true
	fi
	if ! fuse_mounted; then
		mkdir -p "$FUSE"
		log "mounting $(brick_host):/$VOLUME on $FUSE"
		timeout 120 mount -t glusterfs "$(brick_host):/$VOLUME" "$FUSE" ||
			die "mount -t glusterfs $(brick_host):/$VOLUME $FUSE failed"
	fi
	wait_for 30 timeout 10 stat "$FUSE/." || die "FUSE mount $FUSE does not answer"
	chmod 1777 "$FUSE"
}

unmount_fuse() {
	local i
	for ((i = 0; i < 5; i++)); do
		fuse_mounted || return 0
		umount "$FUSE" 2>/dev/null || umount -l "$FUSE" 2>/dev/null || true
		sleep 0.5
	done
	fuse_mounted && warn "could not unmount $FUSE"
	return 0
}
