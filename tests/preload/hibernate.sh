#!/usr/bin/env bash
# Hibernate with the fake driver making its host copy inside the target as the real one does
# (CUDANAP_FAKE_COPY_MIB): the copy in an unnamed file of [hibernate] dir or --to-disk=DIR, the RSS
# it leaves, every byte back at resume; a missing, symlinked or open directory refused; a disk too
# small refused before the lock, or (without that check) the copy kept in RAM; a job bigger than
# its cgroup's memory limit (v2 or v1) suspends to disk; a read error at resume leaves the job
# suspended; a process killed while hibernated leaves no file and no space.
. "$(dirname "$0")/../lib.sh"
copy=256 # MiB the "GPU" holds; the driver's copy is 1.0625 x that
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake \
	CUDANAP_FAKE_COPY_MIB=$copy CUDANAP_FAKE_FOOTPRINT_MIB=$copy
mkdir "$T/fake"
mkdir -m 700 "$T/hib" "$T/hib2"

rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
files_in() { # files_in PID DIR: the process's open files in DIR (a "(deleted)" one included)
	local f n=0
	for f in /proc/"$1"/fd/*; do [[ $(readlink "$f") == "$2"/* ]] && n=$((n + 1)); done
	echo $n
}
# within PID MIB: RSS grew by at most MIB since the baseline $base
within() { [ $(( ($(rss_kib "$1") - base) / 1024 )) -le "$2" ]; }

# -- in RAM first, for the contrast
write_ini
start A "$TARGET"
pid=$A_pid
base=$(rss_kib "$pid")
"$CUDANAP" suspend "$pid" > /dev/null
ram=$(( ($(rss_kib "$pid") - base) / 1024 ))
check "in RAM, the suspended process holds its copy (+$ram MiB RSS)" test "$ram" -ge "$copy"
"$CUDANAP" resume "$pid" > /dev/null
ask A verify
is "$REPLY" "verify ok" "and gets it back"

# -- to disk: [hibernate] dir
write_ini "[hibernate]" "dir = $T/hib"
base=$(rss_kib "$pid")
cli suspend "$pid"
is "$rc" 0 "suspend with [hibernate] dir"
like "$(field "$pid" message)" "^suspended to $T/hib$" "the status says where"
disk=$(field "$pid" disk_mib) host=$(field "$pid" host_mib)
limit=$((copy * 2 / 100))
check "asleep, its RSS grew by at most 2% of the copy ($(( ($(rss_kib "$pid") - base) / 1024 )) MiB, at most $limit)" within "$pid" "$limit"
like "$disk:$host" "^2[7-9][0-9](\.[0-9]+)?:[0-5](\.[0-9]+)?$" "status: disk_mib ~ the copy, host_mib ~ 0 ($disk, $host)"
is "$(files_in "$pid" "$T/hib"):$(ls -A "$T/hib" | wc -l)" "1:0" "one open file in the dir, with no name"
like "$("$CUDANAP" status "$pid")" "(^|
)$pid +checkpointed .* $copy +[0-5] +2[7-9][0-9] " "cudanap status shows GPU, host and disk MiB"
cli resume "$pid"
is "$rc" 0 "resume reads it back"
like "$out" "readback [0-9.]+ ms" "the read-back is a step of its own"
diag "$out"
ask A verify
is "$REPLY" "verify ok" "every byte back (the fake driver checks the whole copy too)"
is "$(files_in "$pid" "$T/hib")" 0 "the file is closed after the resume"

# -- --to-disk=DIR for one suspend, with nothing in the INI
write_ini
cli suspend --to-disk="$T/hib2" "$pid"
like "$rc:$(field "$pid" message)" "^0:suspended to $T/hib2$" "cudanap suspend --to-disk=DIR"
"$CUDANAP" resume "$pid" > /dev/null
ask A verify
is "$REPLY" "verify ok" "data intact"
write_ini "[preflight]" "host_margin_mib = 16000000"
cli2 prepare "$pid"
like "$rc:$out" "^1:$pid: prepare failed: NO_HOST_MEMORY: .*host copy can have only" \
	"a prepare after a suspend to disk checks the host's memory (it stages in RAM), not the disk"
write_ini
cli suspend --to-disk "$pid"
like "$rc:$out" "^1:.*REFUSED: --to-disk: no directory given and none in \[hibernate\] dir; the process keeps running" \
	"--to-disk with no directory anywhere: refused in one line"
"$CUDANAP" suspend "$pid" > /dev/null
like "$(field "$pid" message)" "^suspended$" "the request was for one suspend only"
"$CUDANAP" resume "$pid" > /dev/null

# -- bad directories: refused before the lock, the process runs on
ln -s "$T/hib" "$T/link"
mkdir -m 777 "$T/open"
for bad in "$T/missing:No such file or directory" "$T/link:is a symlink" "$T/open:mode 777 lets others write"; do
	write_ini "[hibernate]" "dir = ${bad%%:*}"
	cli suspend "$pid"
	like "$rc:$out" "^1:$pid: suspend failed: REFUSED: hibernate dir ${bad%%:*}: ${bad#*:}.*; the process keeps running \(state running\)$" \
		"hibernate dir ${bad##*/}"
done
ask A verify
is "$REPLY" "verify ok" "still running, data intact"

# -- small filesystems (tmpfs), where this machine lets us mount
mkdir "$T/small" "$T/big"
if mount -t tmpfs -o size=64m,mode=700 tmpfs "$T/small" 2> /dev/null; then
	write_ini "[hibernate]" "dir = $T/small"
	cli suspend "$pid"
	like "$rc:$out" "^1:.*NO_DISK_SPACE: the process holds $copy MiB on its GPUs; its copy \(272 MiB\) and the [0-9]+ MiB margin do not fit in the 64 MiB free in the hibernate dir; the process keeps running \(state running\)" \
		"a disk too small: refused before the lock"
	write_ini "[hibernate]" "dir = $T/small" "[preflight]" "host_memory = false"
	cli suspend "$pid"
	is "$rc" 0 "without the check: suspended anyway"
	like "$(field "$pid" message)" "^suspended; hibernate: no room for the 272 MiB copy in $T/small \(No space left on device\): it stays in RAM$" \
		"the disk full at the reservation: the copy stays in RAM, said in one line"
	is "$(df --output=used -m "$T/small" | tail -n 1 | tr -d ' ')" 0 "nothing left taken on the small disk"
	"$CUDANAP" resume "$pid" > /dev/null
	ask A verify
	is "$REPLY" "verify ok" "and it resumes from RAM, intact"
	umount "$T/small"

	mount -t tmpfs -o size=2g,mode=700 tmpfs "$T/big"
	write_ini "[hibernate]" "dir = $T/big"
	start B "$TARGET"
	"$CUDANAP" suspend "$B_pid" > /dev/null
	is "$(field "$B_pid" message)" "suspended to $T/big" "a second job hibernated on tmpfs"
	used=$(df --output=used -m "$T/big" | tail -n 1 | tr -d ' ')
	check "hibernated on tmpfs: $used MiB in use there" test "$used" -ge 272
	kill -9 "$B_pid"
	wait "$B_pid" 2> /dev/null
	tmpfs_empty() { [ "$(df --output=used -m "$T/big" | tail -n 1 | tr -d ' '):$(ls -A "$T/big" | wc -l)" = 0:0 ]; }
	eventually 20 tmpfs_empty
	is "$(df --output=used -m "$T/big" | tail -n 1 | tr -d ' '):$(ls -A "$T/big" | wc -l)" "0:0" \
		"killed with -9 while hibernated: no file left, the space back"
	umount "$T/big"
else
	diag "cannot mount tmpfs here: the small-disk and kill -9 cases are not run"
	for _ in 1 2 3 4 5 6 7 8; do ok 0 "# SKIP no tmpfs mount"; done
fi

# -- bigger than the memory its cgroup may use: the copy streams through the page cache
lim=$((copy * 3 / 4))
memory_cgroup "$lim"
if [ -f "$cg/memory.max" ]; then
	peak() { echo $(( $(cat "$cg/memory.peak" 2> /dev/null || echo 0) >> 20 )); }
else
	peak() { echo $(( $(cat "$cg/memory.max_usage_in_bytes") >> 20 )); }
fi
if [ -n "$cg" ]; then
	write_ini
	start D bash -c "echo \$\$ > $cg/cgroup.procs && exec $TARGET"
	cli suspend "$D_pid"
	like "$rc:$out" "^1:.*NO_HOST_MEMORY: .*cgroup .*; the process keeps running" \
		"a $copy MiB job in a cgroup limited to $lim MiB: refused in RAM"
	write_ini "[hibernate]" "dir = $T/hib"
	cli suspend "$D_pid"
	is "$rc:$(field "$D_pid" message)" "0:suspended to $T/hib" "suspended to disk instead"
	diag "$out; the cgroup's peak: $(peak) MiB"
	cli resume "$D_pid"
	is "$rc" 0 "resumed through the same limit"
	ask D verify
	is "$REPLY" "verify ok" "every byte back (the fake driver checks its whole copy)"
	ask D quit
	wait "$D_pid"
else
	diag "no memory cgroup to limit here"
	for _ in 1 2 3 4; do ok 0 "# SKIP no memory cgroup"; done
fi

# -- a read error at resume: the file cut short under the sleeping process
write_ini "[hibernate]" "dir = $T/hib"
start C "$TARGET"
"$CUDANAP" suspend "$C_pid" > /dev/null
for f in /proc/"$C_pid"/fd/*; do [[ $(readlink "$f") == "$T/hib"/* ]] && truncate -s 0 "$f"; done
cli resume "$C_pid"
like "$rc:$out" "^1:$C_pid: resume failed: HIBERNATE_READ_ERROR: hibernate: reading back from $T/hib failed: .*; still suspended, the file kept while the process lives \(state checkpointed\)$" \
	"a read error: one line, the job stays suspended"
is "$(field "$C_pid" state):$(files_in "$C_pid" "$T/hib")" "checkpointed:1" "checkpointed, the file still open"
kill -0 "$C_pid"
is "$?" 0 "the process lives"
kill -9 "$C_pid"

ask A quit
finish
