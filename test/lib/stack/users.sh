# shellcheck shell=bash
# test/lib/stack/users.sh: the Unix test users and group, and their Samba
# passwords in the private passdb.
# Sourced by test/stack (after common.sh).

ensure_users() {
	getent group "$GROUP" >/dev/null || groupadd "$GROUP"
	local u
	for u in "$USER1" "$USER2"; do
		if ! id "$u" >/dev/null 2>&1; then
			log "creating Unix user $u"
			useradd -M -d /nonexistent -s /usr/sbin/nologin "$u"
		fi
	done
	if ! grep -qx "$GROUP" <<<"$(id -nG "$USER1" | tr ' ' '\n')"; then
		usermod -a -G "$GROUP" "$USER1"
	fi
	if grep -qx "$GROUP" <<<"$(id -nG "$USER2" | tr ' ' '\n')"; then
		gpasswd -d "$USER2" "$GROUP" >/dev/null
	fi
}

ensure_smb_passwords() {
	local u p out
	for u in "$USER1:$PASS1" "$USER2:$PASS2"; do
		p=${u#*:}
		u=${u%%:*}
		if ! out=$(printf '%s\n%s\n' "$p" "$p" | smbpasswd -c "$CONF" -a -s "$u" 2>&1); then
			echo "$out" >&2
			die "smbpasswd -c $CONF -a $u failed"
		fi
	done
}

# down --purge: the test users and their group go.
delete_users() {
	local u
	for u in "$USER1" "$USER2"; do
		if id "$u" >/dev/null 2>&1; then
			log "deleting user $u"
			userdel "$u" 2>/dev/null || true
		fi
	done
	if getent group "$GROUP" >/dev/null; then groupdel "$GROUP" 2>/dev/null || true; fi
}
