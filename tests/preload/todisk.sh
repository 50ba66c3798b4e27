#!/usr/bin/env bash
# [nap] to = auto, with the fake driver and a memory cgroup that leaves no host room for a copy:
# a nap goes to RAM where the host holds its copy and, full, to [hibernate] dir where it does not
# (status, log and metrics say why), and wakes intact; to = ram refuses the same nap before the
# lock and the process runs on; make_room, the user's own and the node pager's, naps an idle
# process to disk when the host has no room for its copy, where before it found no one to nap;
# check-config's words.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
export CUDANAP_FAKE_GPU_MIB=4000
mkdir "$T/fake" "$T/hib"
[ "$(id -u)" = 0 ] || skip_all "needs root: a memory cgroup of its own"
memory_cgroup 3000
[ -n "$cg" ] || skip_all "no memory cgroup to limit here"
in_cg() { echo "echo \$\$ > $cg/cgroup.procs && exec $TARGET"; }
word_is() { ask "$1" "drv vmm word A 0"; [ "$REPLY" = "vmm word 0 $2" ]; }
# holding NAME MIB [WHERE]: a target holding MIB of the fake GPU, a word written at its start,
# in the cgroup unless WHERE is "out"
holding() {
	if [ "${3:-}" = out ]; then start "$1" "$TARGET"; else start "$1" bash -c "$(in_cg)"; fi
	eval "pid=\$${1}_pid"
	ask "$1" "drv vmm use 0"
	ask "$1" "drv alloc export $2"
	ask "$1" "drv vmm word A 0 ${4:-7}"
}
asleep() { [ "$(fields "$1" nap:nap_depth:busy)" = "napping:$2:false" ]; }
full_napped() { asleep "$1" full; }
light_napped() { asleep "$1" light; }
wake() { ask "$1" "drv launch export 5" 30; [ "$REPLY" = "launch 0" ] && woke "$2"; }
quit() { local p; eval "p=\$${1}_pid"; ask "$1" quit; wait "$p" 2> /dev/null; rm -f "$T/fake/$p".*; }

# -- check-config
printf '[nap]\nto = auto\n' > "$T/bad.ini"
is "$("$CUDANAP" check-config "$T/bad.ini" 2>&1 | head -n 1)" \
	"cudanap: $T/bad.ini:2: nap.to: auto needs a directory in [hibernate] dir" "to = auto without a directory"
printf '[nap]\nto = atuo\n' > "$T/bad.ini"
like "$("$CUDANAP" check-config "$T/bad.ini" 2>&1 | head -n 1)" "nap.to: .*ram, disk or auto" "a wrong word names the three"

# -- the host holds the copy: to RAM, lightly, as with to = ram
INI=("[nap]" "to = auto" "make_room = true" "min_idle_s = 1" "copy_ahead = false"
	"keep_host_copy = false" "[hibernate]" "dir = $T/hib" "[log]" "level = info")
write_ini "${INI[@]}"
holding A 300
disk_room() { [ "$(field "$1" nap_disk_mib | cut -d. -f1)" -gt 0 ] 2> /dev/null; }
check "the status says how much room a nap of it has on disk" eventually 10 disk_room "$A_pid"
cli nap "$A_pid"
is "$rc" 0 "A napped ($out)"
check "A napped lightly: the host holds its 300 MiB" eventually 10 light_napped "$A_pid"
is "$(field "$A_pid" disk_mib)" null "nothing of it on disk"
check "A woken" wake A "$A_pid"
check "its word as it was" word_is A 7
quit A

# -- the host has no room: to disk, full
CUDANAP_FAKE_COPY_MIB=64 holding B 2500
cli nap "$B_pid"
is "$rc" 0 "B napped ($out)"
check "B napped fully" eventually 10 full_napped "$B_pid"
is "$(field "$B_pid" depth_why)" "host full" "depth_why: host full"
like "$(field "$B_pid" disk_mib)" "^[1-9]" "its copy on disk ($(field "$B_pid" disk_mib) MiB)"
log_like "$T/B.err" "napped \(cudanap nap\): .*; full: to \[hibernate\] dir $T/hib: the host had no room for its copy \([0-9]+ MiB and the 1024 MiB of \[preflight\] host_margin_mib, where cgroup .* has [0-9]+ MiB\)" \
	"its log says where and why"
like "$("$CUDANAP" metrics -c "$T/job.ini")" $'\n'"cudanap_naps_full_total\\{pid=\"$B_pid\",[^}]*why=\"host full\"\\} 1"$'\n' \
	"metrics count it: why=\"host full\""
check "B woken from disk" wake B "$B_pid"
check "its word as it was" word_is B 7

# -- make_room: B idle, its copy without host room; C needs the GPU B holds
holding C 200 out
idle() { [ -n "$(field "$1" idle_since)" ]; }
check "B idle a second" eventually 10 idle "$B_pid"
sleep 1.2
ask C "drv alloc export 2000" 60
is "$REPLY" "alloc 0" "C's 2000 MiB allocated: room made"
check "B napped for it, to disk" eventually 10 full_napped "$B_pid"
is "$(field "$B_pid" depth_why):$(field "$B_pid" nap_for_pid)" "host full:$C_pid" "B's status: host full, for C"
log_like "$T/C.err" "made room on GPU 0 for 2000 MiB \(cuMemAlloc[^)]*\): napped $B_pid" "C's log says it made room"
quit C
check "B woken from disk" wake B "$B_pid"
check "its word as it was" word_is B 7
quit B

# -- the node pager (make_room = node): the same choice, made by root's pager
mkdir -m 755 "$T/run"
printf '[pager]\nsocket = %s\nstate = %s\nmin_idle_s = 1\nmargin_mib = 0\n' \
	"$T/run/pager.sock" "$T/run/pager.state" > "$T/pager.ini"
"$PAGER" -c "$T/pager.ini" 2>> "$T/pager.log" &
pager_pid=$!
check "the pager listens" eventually 20 test -S "$T/run/pager.sock"
write_ini "[nap]" "to = auto" "make_room = node" "pager_socket = $T/run/pager.sock" "min_idle_s = 1" \
	"copy_ahead = false" "keep_host_copy = false" "[hibernate]" "dir = $T/hib" "[restore]" \
	"margin_mib = 0" "[log]" "level = info"
CUDANAP_FAKE_COPY_MIB=64 holding E 2500
check "E offers disk room" eventually 10 disk_room "$E_pid"
holding F 200 out
check "E idle a second" eventually 10 idle "$E_pid"
sleep 1.2
ask F "drv alloc export 2000" 60
is "$REPLY" "alloc 0" "F's 2000 MiB allocated: the pager made room"
check "E napped for it, to disk" eventually 10 full_napped "$E_pid"
is "$(field "$E_pid" depth_why):$(field "$E_pid" nap_for_pid)" "host full:$F_pid" "E's status: host full, for F"
quit F
check "E woken from disk" wake E "$E_pid"
check "its word as it was" word_is E 7
quit E
kill "$pager_pid" 2> /dev/null
wait "$pager_pid" 2> /dev/null

# -- a hibernate dir a nap would not use (writable by others): no disk room offered, and a nap the
# host cannot hold is refused in one line; the process runs on
mkdir -m 777 "$T/hib2"
write_ini "[nap]" "to = auto" "make_room = true" "min_idle_s = 1" "copy_ahead = false" \
	"keep_host_copy = false" "[hibernate]" "dir = $T/hib2" "[log]" "level = info"
CUDANAP_FAKE_COPY_MIB=64 holding G 2500
check "G idle" eventually 10 idle "$G_pid"
is "$(field "$G_pid" nap_disk_mib)" 0.000 "a dir writable by others: no disk room offered"
cli nap "$G_pid"
check "G not napped" test "$rc" != 0
like "$out" "hibernate dir $T/hib2" "the refusal names the directory"
is "$(field "$G_pid" state)" running "G runs on"
check "its word as it was" word_is G 7
quit G

# -- to = ram: the same nap refused before the lock; the process runs on, and offers no disk room
write_ini "[nap]" "to = ram" "make_room = true" "min_idle_s = 1" "copy_ahead = false" \
	"keep_host_copy = false" "[hibernate]" "dir = $T/hib" "[log]" "level = info"
CUDANAP_FAKE_COPY_MIB=64 holding D 2500
cli nap "$D_pid"
check "to = ram: D not napped" test "$rc" != 0
like "$out" "host copy can have only" "the refusal names the host's room"
is "$(field "$D_pid" state)" running "D runs on"
check "its word as it was" word_is D 7
like "$(field "$D_pid" nap_disk_mib)" "^(null|0\.000)$" "to = ram: no disk room offered to others"
quit D
finish
