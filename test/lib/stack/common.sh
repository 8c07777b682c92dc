# shellcheck shell=bash
# test/lib/stack/common.sh: paths, names and small helpers of test/stack
# (sourced by it, after it has set ROOT, the checkout's top directory).

: "${ROOT:?test/lib/stack/common.sh needs ROOT (sourced by test/stack)}"

export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH"

# The stack's directory: .stack/ at the top of the checkout, or
# GF2_STACK_DIR (an absolute path), so that one checkout can run a second
# stack beside its own (CI's conformance part beside its end-to-end part,
# each with its own GF2_STACK_PORT and volumes).
STACK=${GF2_STACK_DIR:-$ROOT/.stack}
case $STACK in
/*) ;;
*) echo "test/stack: GF2_STACK_DIR=$STACK: an absolute path, please" >&2; exit 2 ;;
esac
STATE=$STACK/state
SMBDIR=$STACK/smb
CONF=$SMBDIR/smb.conf
FUSE=$STACK/fuse
LOCAL=$STACK/local
BRICKROOT=$STACK/bricks
BUILDLOG=$STACK/build.log

USER1=gf2user1 PASS1=gf2pass1
USER2=gf2user2 PASS2=gf2pass2
GROUP=gf2group
# Overridable so that a second checkout (a CI verification run, say) can
# run its own stack beside this one on the same glusterd.
DEFAULT_PORT=${GF2_STACK_PORT:-4450}
VOL_DIST=${GF2_STACK_VOLUME:-gf2test}
VOL_REP3=${GF2_STACK_VOLUME_REP3:-gf2rep3}
VOL_DREP3=${GF2_STACK_VOLUME_DREP3:-gf2drep3}
SHARES="glusterfs2 glusterfs fuse local glusterfs2-noprefetch"
# The module the [glusterfs2] shares load (GF2_STACK_MODULE=NAME: a checkout
# configured with `./waf configure --module-name=NAME` serves its own build
# as MODULESDIR/vfs/NAME.so, leaving glusterfs2.so to other stacks).
MODULE=${GF2_STACK_MODULE:-glusterfs2}
case $MODULE in
*[!A-Za-z0-9_]* | "") echo "test/stack: GF2_STACK_MODULE=$MODULE: letters, digits and _ only" >&2; exit 2 ;;
esac
# The sanitizer build (up --asan) is named after it: glusterfs2_asan, or
# NAME_asan beside a checkout's own NAME (test/asan/sanitizers.py agrees).
ASAN_MODULE=${MODULE}_asan
ASAN_REPORTS=$STACK/asan-reports
SANITIZERS=$ROOT/test/asan/sanitizers.py
OUR_VOLUMES="$VOL_DIST $VOL_REP3 $VOL_DREP3"
SMB_HOST=127.0.0.1
# Addresses smbd listens on besides 127.0.0.1 (GF2_STACK_LISTEN): the
# stack inside a test platform (test/stack up --platform NAME) also
# listens on the platform's namespace address, which the host reaches.
LISTEN=${GF2_STACK_LISTEN:-}
case $LISTEN in
*[!0-9A-Fa-f.:\ ]*) echo "test/stack: GF2_STACK_LISTEN=$LISTEN: IP addresses only" >&2; exit 2 ;;
esac
# A Samba installed under a prefix (up --smbd-prefix DIR, or
# GF2_STACK_SMBD_PREFIX=DIR): smbd is DIR/sbin/smbd, and DIR/bin and
# DIR/sbin come first in PATH, so the tools (smbpasswd, smbclient,
# smbstatus, smbcacls...) are that Samba's too.  `up` keeps it in the state,
# where down, env and status read it.  Empty: /usr/sbin/smbd.
SMBD_PREFIX=""
use_smbd_prefix() { # DIR (or "")
	SMBD_PREFIX=$1
	if [ -n "$1" ]; then export PATH="$1/bin:$1/sbin:$PATH"; fi
}
# The share of a baseline build of the module (up --baseline-module NAME)
BASE_SHARE=glusterfs2-base
# ... and the same build with the write cache on, beside [glusterfs2-wcache]
BASE_WC_SHARE=glusterfs2-base-wcache

# Is PID's root directory ours?  The test platforms' processes
# (test/platform/root) share the PID namespace and, run from the same
# checkout, the same paths: a stack inside a platform and the host's stack
# must never take each other's processes.  Compared by device and inode,
# which also holds inside a chroot (where readlink shows "/" for both).
same_root() {
	[ "$(stat -Lc %d:%i "/proc/$1/root" 2>/dev/null)" = "$(stat -Lc %d:%i /)" ]
}

log() { echo "stack: $*"; }

warn() { echo "stack: WARNING: $*" >&2; }

die() {
	echo "stack: error: $*" >&2
	exit 1
}

need_root() {
	[ "$(id -u)" = 0 ] || die "must run as root (glusterd, mount, useradd, smbd)"
}

# Bounded wait: wait_for SECONDS DESCRIPTION COMMAND...
wait_for() {
	local secs=$1 what=$2 i
	shift 2
	for ((i = 0; i < secs * 2; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.5
	done
	return 1
}

host_name() { hostname; }

check_hostname() {
	local h addrs a
	h=$(host_name)
	addrs=$(getent ahosts "$h" | awk '{print $1}' | sort -u) || true
	[ -n "$addrs" ] ||
		die "hostname '$h' does not resolve; add '127.0.0.1 $h' to /etc/hosts"
	for a in $addrs; do
		case $a in
		127.* | ::1) ;;
		*) die "hostname '$h' resolves to $a, not a loopback address; the stack is" \
			"loopback-only: make '$h' resolve to 127.0.0.1 in /etc/hosts" ;;
		esac
	done
}

# kill_pids WHAT PID...: SIGTERM, then each of them waited for (looked at
# every tenth of a second) for up to 10 s; those left get SIGKILL and up
# to another half second to go.
kill_pids() { # WHAT PID...
	local what=$1 end alive p i
	shift
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null || true
	end=$((SECONDS + 10))
	while :; do
		alive=""
		for p in "$@"; do
			if kill -0 "$p" 2>/dev/null; then alive="$alive $p"; fi
		done
		[ -n "$alive" ] || return 0
		[ "$SECONDS" -lt "$end" ] || break
		sleep 0.1
	done
	warn "$what did not exit on SIGTERM, sending SIGKILL to$alive"
	# shellcheck disable=SC2086
	kill -KILL $alive 2>/dev/null || true
	for ((i = 0; i < 5; i++)); do
		# shellcheck disable=SC2086
		set -- $alive
		alive=""
		for p in "$@"; do
			if kill -0 "$p" 2>/dev/null; then alive="$alive $p"; fi
		done
		[ -n "$alive" ] || return 0
		sleep 0.1
	done
}

# What the stacks of this machine share (glusterd, the Unix test users):
# /run/gf2-stack, a file system of this boot (a test platform's root has
# its own /run).  HOST_LOCK serialises glusterd's start and stop, the
# volume creation that follows a start, and the users' creation among
# every stack; GLUSTERD_MARK holds the pid of a glusterd that a test/stack
# up started; GLUSTERD_USERS/PID marks a process that uses glusterd
# without a stack volume of its own (test/run-all --only cluster).
HOST_SHARED=/run/gf2-stack
HOST_LOCK=$HOST_SHARED/lock
GLUSTERD_MARK=$HOST_SHARED/glusterd-started
GLUSTERD_USERS=$HOST_SHARED/glusterd-users

# take_host_lock / drop_host_lock: file descriptor 8 (9 is the stack's
# own lock); every daemon started with it held closes it (8>&-).
take_host_lock() {
	mkdir -p "$HOST_SHARED"
	exec 8> "$HOST_LOCK"
	if ! flock -w 600 8; then
		die "another test/stack holds $HOST_LOCK for 10 minutes"
	fi
}

drop_host_lock() {
	exec 8>&-
}

port_listeners() { # PORT -> "pid ..." of listeners, or "?" if unknown owner
	ss -Hltnp "sport = :$1" 2>/dev/null || true
}

q() { # shell-quote a value only when needed
	if [[ $1 =~ ^[A-Za-z0-9_./:@%+,=-]*$ ]]; then
		printf '%s' "$1"
	else
		printf "'%s'" "${1//\'/\'\\\'\'}"
	fi
}
