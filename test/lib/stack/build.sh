# shellcheck shell=bash
# test/lib/stack/build.sh: the glusterfs2 module: where it is installed,
# whether it is current, its build and install (and the sanitizer build's).
# Sourced by test/stack (after common.sh).

modules_dir() {
	smbd -b | sed -n 's/.*MODULESDIR: //p'
}

module_path() {
	echo "$(modules_dir)/vfs/$MODULE.so"
}

# Is the installed module older than any source file?  Prints the reason.
module_state() {
	local mod newer
	mod=$(module_path)
	if [ ! -f "$mod" ]; then
		echo missing
		return
	fi
	newer=""
	local p
	for p in source include wscript; do
		if [ -e "$ROOT/$p" ]; then
			newer=$(find "$ROOT/$p" -newer "$mod" -type f -print -quit 2>/dev/null || true)
			if [ -n "$newer" ]; then break; fi
		fi
	done
	if [ -n "$newer" ]; then echo stale; else echo ok; fi
}

# Build and install the module if it is missing or older than its sources.
# Prints "installed" if a new module was installed.
ensure_module() {
	local st mod
	st=$(module_state)
	mod=$(module_path)
	if [ "$st" = ok ]; then
		return 0
	fi
	if [ ! -x "$ROOT/waf" ] || [ ! -d "$ROOT/source" ]; then
		warn "glusterfs2 module $st ($mod) and no ./waf + source/ to build it yet:" \
			"the [glusterfs2] share will fail tree connects" >&2
		return 0
	fi
	log "building glusterfs2 ($st; log: $BUILDLOG)" >&2
	local ok=1 before=""
	if [ -f "$mod" ]; then before=$(sha256sum < "$mod"); fi
	(
		cd "$ROOT" || exit 1
		if [ ! -f build/c4che/_cache.py ] ||
			! grep -qx "MODULE_NAME = '$MODULE'" build/c4che/_cache.py; then
			echo "+ ./waf configure --module-name=$MODULE"
			timeout 3600 ./waf configure --module-name="$MODULE" || exit 1
		fi
		echo "+ ./waf build"
		timeout 3600 ./waf build || exit 1
		echo "+ ./waf install"
		timeout 600 ./waf install || exit 1
	) > "$BUILDLOG" 2>&1 || ok=0
	if [ "$ok" = 1 ] && [ -f "$mod" ]; then
		# waf skips unchanged outputs (a touched but unchanged source): mark
		# the installed module current so that the next `up` does not rebuild.
		touch "$mod"
		if [ "$(sha256sum < "$mod")" != "$before" ]; then
			log "installed $mod" >&2
			echo installed
		else
			log "module $mod unchanged" >&2
		fi
	else
		tail -n 25 "$BUILDLOG" | sed 's/^/    | /' >&2
		if [ -f "$mod" ]; then
			warn "could not build/install the glusterfs2 module (full log: $BUILDLOG);" \
				"the [glusterfs2] share keeps using the older installed $mod" >&2
		else
			warn "could not build/install the glusterfs2 module (full log: $BUILDLOG);" \
				"the [glusterfs2] share will fail tree connects until it is built" >&2
		fi
	fi
}

# The sanitizer build of the module, built when stale and installed as
# MODULESDIR/vfs/$ASAN_MODULE.so (MODULE_asan).  Prints "installed" when the
# installed file changed.
ensure_asan_module() {
	local mod before="" out
	mod="$(modules_dir)/vfs/$ASAN_MODULE.so"
	if [ -f "$mod" ]; then before=$(sha256sum < "$mod"); fi
	log "sanitizer module: building when stale (log: $STACK/asan/build.log)" >&2
	if ! out=$(GF2_STACK_MODULE=$MODULE "$SANITIZERS" build \
		--logdir "$STACK/asan" 2>&1); then
		echo "$out" | sed 's/^/    | /' >&2
		tail -n 25 "$STACK/asan/build.log" 2>/dev/null | sed 's/^/    | /' >&2
		die "could not build/install the sanitizer module $ASAN_MODULE"
	fi
	if [ "$(sha256sum < "$mod")" != "$before" ]; then
		log "installed $mod" >&2
		echo installed
	fi
}
