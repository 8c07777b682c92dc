# shellcheck shell=bash
# test/lib/stack/smbd.sh: the private smbd: its processes, start, stop,
# the wait until it serves, and share checks with smbclient.
# Sourced by test/stack (after common.sh).

# smbd_exe_ours EXE [main]: is EXE our smbd's executable (main: smbd itself
# only, else also its samba-dcerpcd / rpcd_* helpers), the system's or that
# of the prefix (the wanted one, SMBD_PREFIX, or the one `up` started)
smbd_exe_ours() {
	local p
	case $1 in
	/usr/sbin/smbd) return 0 ;;
	/usr/libexec/samba/*) [ "${2:-}" != main ] && return 0 ;;
	esac
	for p in $SMBD_PREFIX $(state_get SMBD_PREFIX); do
		case $1 in
		"$p"/sbin/smbd) return 0 ;;
		"$p"/libexec/samba/*) [ "${2:-}" != main ] && return 0 ;;
		esac
	done
	return 1
}

# pids of the processes of our private smbd (smbd and its samba-dcerpcd /
# rpcd_* helpers), i.e. Samba processes whose command line names our CONF.
smbd_pids() {
	local pid exe cmd
	for pid in $(pgrep -f -- "$CONF" 2>/dev/null || true); do
		[ "$pid" != "$$" ] || continue
		same_root "$pid" || continue
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
		smbd_exe_ours "$exe" || continue
		cmd=$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null || true)
		if grep -qxF -- "$CONF" <<<"$cmd" ||
			grep -qF -- "=$CONF" <<<"$cmd"; then
			echo "$pid"
		fi
	done
}

# The pid of the main smbd (from the pid file), if it is alive.
smbd_main_pid() {
	local f pid
	for f in "$SMBDIR"/run/smbd*.pid; do
		[ -f "$f" ] || continue
		pid=$(head -n 1 "$f" 2>/dev/null | tr -dc '0-9')
		[ -n "$pid" ] && same_root "$pid" || continue
		if smbd_exe_ours "$(readlink "/proc/$pid/exe" 2>/dev/null)" main &&
			grep -qxF -- "$CONF" <<<"$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null)"; then
			echo "$pid"
			return 0
		fi
	done
	return 1
}

stop_smbd() {
	local pids main i
	# A sanitizer-mode smbd: SIGTERM to the main process only, which
	# passes it on to its children; every process then exits through
	# exit() and writes its exit-time leak report (a child first finishes
	# glfs_fini, ~10 s, slower under ASan).  What is left after 180 s
	# gets the plain treatment below.
	main=$(smbd_main_pid || true)
	if [ -n "$main" ] && [ "$(state_get ASAN 0)" = 1 ]; then
		log "stopping private smbd (sanitizer mode): SIGTERM to $main, waiting for all its processes"
		kill -TERM "$main" 2>/dev/null || true
		for ((i = 0; i < 360; i++)); do
			[ -n "$(smbd_pids)" ] || break
			sleep 0.5
		done
	fi
	pids=$(smbd_pids | tr '\n' ' ')
	if [ -n "${pids// /}" ]; then
		log "stopping private smbd ($pids)"
		# shellcheck disable=SC2086
		kill_pids smbd $pids
	fi
	rm -f "$SMBDIR"/run/*.pid
}

smb_ls() { # SHARE [USER PASS]
	timeout 60 smbclient -p "$(state_get SMB_PORT "$DEFAULT_PORT")" \
		"//$SMB_HOST/$1" -U "${2:-$USER1}%${3:-$PASS1}" -c ls
}

# check_shares SHARE... -> "SHARE OK|FAIL" lines; the checks run in parallel.
check_shares() {
	local s tmp
	tmp=$(mktemp -d)
	for s in "$@"; do
		(if smb_ls "$s" >/dev/null 2>&1; then echo OK; else echo FAIL; fi) > "$tmp/$s" &
	done
	wait
	for s in "$@"; do echo "$s $(cat "$tmp/$s")"; done
	rm -rf "$tmp"
}

start_smbd() {
	local port=$1 asan=${2:-0} l senv
	l=$(port_listeners "$port")
	if [ -n "$l" ]; then
		die "port $port is already in use (not by this stack's smbd): $l -- use --port N"
	fi
	if [ "$asan" = 1 ]; then
		senv=$("$SANITIZERS" env "$ASAN_REPORTS" stack) ||
			die "no sanitizer environment (test/asan/sanitizers.py env)"
		log "starting private smbd on $SMB_HOST:$port (sanitizer mode: libasan preloaded, reports in $ASAN_REPORTS)"
		(
			set -a
			eval "$senv"
			if [ -n "$RTT_MODE" ]; then
				exec "${RTT_EXEC_ARGV[@]}" smbd -D -s "$CONF" 9>&-
			fi
			exec smbd -D -s "$CONF" 9>&-
		) || die "smbd -D -s $CONF failed (see $SMBDIR/log.smbd)"
		return 0
	fi
	log "starting private smbd on $SMB_HOST:$port"
	in_head smbd -D -s "$CONF" 9>&- || die "smbd -D -s $CONF failed (see $SMBDIR/log.smbd)"
}

# wait_smbd PORT: until the private smbd serves //HOST/local (a listing
# answered), asked every quarter second, for at most 30 s (120 s in
# sanitizer mode).
wait_smbd() {
	local port=$1 out="" secs=30 end
	if [ "$(state_get ASAN 0)" = 1 ]; then secs=120; fi
	end=$((SECONDS + secs))
	while :; do
		if out=$(smb_ls local 2>&1); then
			return 0
		fi
		[ "$SECONDS" -lt "$end" ] || break
		sleep 0.25
	done
	echo "$out" >&2
	echo "--- tail of $SMBDIR/log.smbd:" >&2
	tail -n 30 "$SMBDIR/log.smbd" >&2 2>/dev/null || true
	die "private smbd does not serve //$SMB_HOST/local on port $port after $secs s"
}
