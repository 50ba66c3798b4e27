#!/usr/bin/env bash
# bench-light: a light nap's copy out, into fresh host memory, into a copy made ahead while the
# process idled, and into the copy kept since its last wake, and its wake, each beside the pinned
# floors of the same run (cudanap-hostpin --floor: the same bytes between the GPU and memory pinned
# long before). For each size (SIZES, GiB: 8 28) one process holds that much (holdmem) with naps
# on: napped by cudanap nap with keep_host_copy and copy_ahead off (fresh memory), then on (kept),
# and a second process napped once its copy was made ahead. The first nap of the run is the fresh
# machine's first. Prints the light_ms of each (the status's, the nap's whole copy out) and the
# waking call's wait (last_wake_ms). Run through `ninja -C build bench-light`.
set -u
SIZES=${SIZES:-8 28}
. "$(dirname "$0")/bench-lib.sh"
bench_job
nvidia-smi -L > /dev/null 2>&1 || { echo "bench-light: needs a GPU" >&2; exit 1; }
ini() { # ini KEY=VALUE...: the job INI with naps on (no idle nap for an hour) and the keys given
	{ printf '[status]\ndir = %s\n[lock]\ntimeout_ms = 0\n[nap]\nidle_s = %s\ndepth = light\n' "$T/status" "${IDLE:-3600}"
	  printf '%s\n' "$@"; } > "$T/job.ini"
}
# nap_ms PID: napped by the CLI, its light nap's copy out in ms
nap_ms() { act "$1" nap; field "$1" light_ms; }
# wake_ms: the holder's next call wakes it; the call's wait in ms
wake_ms() {
	local n
	n=$(grep -c '^work' "$T/out")
	echo work >&$fd
	until [ "$(grep -c '^work' "$T/out")" -gt "$n" ]; do sleep 0.001; done
	until [ "$(field "$pid" nap)" = awake ]; do sleep 0.01; done
	field "$pid" last_wake_ms
}
x() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", b / a; else print "-" }'; }

echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)"
printf '| GiB | floor out ms | fresh ms | x | made ahead ms | x | kept ms | x | floor in ms | wake ms | x |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
for gib in $SIZES; do
	read -r _ _ fout _ fin <<< "$("$HOSTPIN" --floor "$gib")"
	ini "keep_host_copy = false" "copy_ahead = false"
	hold "$HOLDMEM" "$gib"
	fresh=$(nap_ms $pid)
	wake=$(wake_ms)
	ini "keep_host_copy = true" "copy_ahead = false"
	nap_ms $pid > /dev/null # the INI read again: this wake keeps its copy
	wake_ms > /dev/null
	kept=$(nap_ms $pid)
	wake_ms > /dev/null
	grep -q "work bad" "$T/out" && { echo "bench-light: $gib GiB: work bad" >&2; exit 1; }
	release "$gib GiB"
	IDLE=20 ini "keep_host_copy = true" "copy_ahead = true" # made ahead after 10 s idle
	hold "$HOLDMEM" "$gib"
	until grep -q "made its host copy ahead" "$T/err"; do sleep 0.1; kill -0 $pid || exit 1; done
	ahead=$(nap_ms $pid)
	wake_ms > /dev/null
	release "$gib GiB, made ahead"
	: > "$T/err"
	printf '| %s | %.1f | %.1f | %s | %.1f | %s | %.1f | %s | %.1f | %.1f | %s |\n' "$gib" "$fout" \
		"$fresh" "$(x "$fout" "$fresh")" "$ahead" "$(x "$fout" "$ahead")" "$kept" "$(x "$fout" "$kept")" \
		"$fin" "$wake" "$(x "$fin" "$wake")"
done
