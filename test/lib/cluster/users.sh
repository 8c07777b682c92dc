# shellcheck shell=bash
# test/lib/cluster/users.sh: the two test users.  The nodes share the
# host's /etc/passwd (only their network, mount and UTS namespaces are
# their own), so a user has the same UID on every node; each node's passdb
# gets the Samba passwords.
# Sourced by test/cluster (after common.sh).

ensure_unix_users() {
	local u
	for u in "$USER1" "$USER2"; do
		if ! id "$u" >/dev/null 2>&1; then
			log "creating Unix user $u"
			useradd -M -d /nonexistent -s /usr/sbin/nologin "$u"
		fi
	done
}

set_smb_passwords() { # N
	local n=$1 u p out
	for u in "$USER1:$PASS1" "$USER2:$PASS2"; do
		p=${u#*:}
		u=${u%%:*}
		if ! out=$(printf '%s\n%s\n' "$p" "$p" | on_node "$n" timeout 60 smbpasswd -a -s "$u" 2>&1); then
			echo "$out" >&2
			die "node $n: smbpasswd -a $u failed"
		fi
	done
}
