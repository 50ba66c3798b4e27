#!/usr/bin/env bash
# `cudanap run` after `meson install`: the installed CLI finds the installed preload.
. "$(dirname "$0")/../lib.sh"
[ -n "${BUILD_ROOT:-}" ] || skip_all "BUILD_ROOT not set"
meson install -C "$BUILD_ROOT" --no-rebuild --destdir "$T/inst" > "$T/install.log" 2>&1 ||
	{ ok 1 "meson install"; diag "$(tail -n 5 "$T/install.log")"; finish; }
cli=$(find "$T/inst" -path '*/bin/cudanap' -type f)
lib=$(find "$T/inst" -name libcudanap.so -type f)
check "cudanap and libcudanap.so installed" test -x "$cli" -a -f "$lib"
check "the example INI installed" test -n "$(find "$T/inst" -name cudanap.ini)"
out=$(env -u CUDANAP_PRELOAD "$cli" run -- /bin/sh -c 'echo "$LD_PRELOAD"')
is "$out" "$(readlink -f "$lib")" "the installed cudanap run preloads the installed library"
out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 "$cli" run -- /bin/sh -c 'echo "$LD_PRELOAD"')
is "$out" "/lib/x86_64-linux-gnu/libc.so.6:$(readlink -f "$lib")" "an existing LD_PRELOAD is kept and ours appended"
is "$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sort | tr '\n' ' ')" "mmap mmap64 munmap " \
	"the preload exports only the symbols it interposes"
finish
