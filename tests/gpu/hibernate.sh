#!/usr/bin/env bash
# Hibernate with the real driver: a CUDANAP_GPU_TEST_GIB (8) GiB job suspended to a directory on
# disk holds at most 2% of its footprint in RAM while asleep and resumes bit for bit; the same job
# in a cgroup whose memory.max is half its footprint (cgroup v2) is refused in RAM and suspends to
# disk. Prints, from the same run, the in-RAM and to-disk times against the disk's own direct-I/O
# write and read rates on that directory (CUDANAP_HIBERNATE_DIR, default /var/tmp).
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ -n "${HOLDMEM:-}" ] && [ -x "$HOLDMEM" ] || skip_all "CUDA test programs not built (no nvcc when meson set up)"
gib=${CUDANAP_GPU_TEST_GIB:-8}
hib=$(mktemp -d "${CUDANAP_HIBERNATE_DIR:-/var/tmp}/cudanap-hib.XXXXXX")
chmod 700 "$hib"
cg=/sys/fs/cgroup/cudanap-test.$$
trap 'cleanup; rm -rf "$hib"; rmdir "$cg" 2> /dev/null' EXIT
diag "hibernate dir $hib on $(df -T "$hib" | awk 'NR == 2 { print $2, $1 }')"

# The disk's own rates on that directory, direct I/O, 16 MiB blocks, as much as the job writes.
rate() { sed -n 's/.* copied, \([0-9.]*\) s, .*/\1/p' | awk -v b=$((gib << 30)) '{ printf "%.0f", b / $1 / 1048576 }'; }
w_mibs=$(dd if=/dev/zero of="$hib/rate" bs=16M count=$((gib * 64)) oflag=direct 2>&1 | rate)
r_mibs=$(dd if="$hib/rate" of=/dev/null bs=16M iflag=direct 2>&1 | rate)
rm -f "$hib/rate"
diag "disk: write $w_mibs MiB/s, read $r_mibs MiB/s (dd, O_DIRECT)"

secs() { awk -v ms="$(field "$1" total_ms)" 'BEGIN { printf "%.2f", ms / 1000 }'; }
rss_mib() { awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$1/status"; }

write_ini
start A "$HOLDMEM" "$gib"
pid=$A_pid
held=$(gpu_mib "$pid")
# in RAM, for the comparison
"$CUDANAP" suspend "$pid" > /dev/null
ram_s=$(secs "$pid")
"$CUDANAP" resume "$pid" > /dev/null
ram_r=$(secs "$pid")
ask A verify 120
is "$REPLY" "verify ok" "in RAM: suspended and resumed ($ram_s s, $ram_r s)"

write_ini "[hibernate]" "dir = $hib"
base=$(rss_mib "$pid")
cli suspend "$pid"
is "$rc:$(field "$pid" message)" "0:suspended to $hib" "suspended to disk"
diag "$out"
disk_s=$(secs "$pid")
grew=$(( $(rss_mib "$pid") - base ))
check "asleep: RSS +$grew MiB over the running process's, at most 2% of $held MiB" test "$grew" -le $((held * 2 / 100))
diag "status: host_mib $(field "$pid" host_mib), disk_mib $(field "$pid" disk_mib), hibernate step $(field "$pid" hibernate_ms) ms"
is "$(gpu_mib "$pid")" 0 "its GPU memory freed"
cli resume "$pid"
is "$rc" 0 "resumed from disk"
diag "$out"
disk_r=$(secs "$pid")
ask A verify 120
is "$REPLY" "verify ok" "every byte back"
ask A quit
wait "$A_pid"

mib=$((gib * 1024))
diag "$(awk -v f="$mib" -v rs="$ram_s" -v rr="$ram_r" -v ds="$disk_s" -v dr="$disk_r" -v w="$w_mibs" -v r="$r_mibs" 'BEGIN {
	fw = f * 1.0625 / w; fr = f * 1.0625 / r
	printf "suspend to disk %.2f s = %.2fx max(in RAM %.2f s, copy / disk write %.2f s); ", ds, ds / (rs > fw ? rs : fw), rs, fw
	printf "resume from disk %.2f s = %.2fx (copy / disk read %.2f s + in RAM %.2f s)", dr, dr / (fr + rr), fr, rr }')"

# -- bigger than the memory the cgroup may use
if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers &&
	{ grep -qw memory /sys/fs/cgroup/cgroup.subtree_control || echo +memory > /sys/fs/cgroup/cgroup.subtree_control; } 2> /dev/null &&
	mkdir "$cg" 2> /dev/null && echo $(( (gib << 30) / 2 )) > "$cg/memory.max"; then
	echo 0 > "$cg/memory.swap.max" 2> /dev/null
	write_ini
	start B bash -c "echo \$\$ > $cg/cgroup.procs && exec $HOLDMEM $gib"
	cli suspend "$B_pid"
	like "$rc:$out" "^1:.*NO_HOST_MEMORY" "a $gib GiB job under memory.max = $((gib / 2)) GiB: refused in RAM"
	write_ini "[hibernate]" "dir = $hib"
	cli suspend "$B_pid"
	is "$rc:$(field "$B_pid" message)" "0:suspended to $hib" "suspended to disk instead"
	diag "$out; cgroup memory.peak $(( $(cat "$cg/memory.peak" 2> /dev/null || echo 0) >> 20 )) MiB"
	cli resume "$B_pid"
	is "$rc" 0 "resumed"
	diag "$out"
	ask B verify 120
	is "$REPLY" "verify ok" "every byte back"
	ask B quit
	wait "$B_pid"
else
	ok 0 "# SKIP no cgroup v2 memory controller to limit"
fi
finish
