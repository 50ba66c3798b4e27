#!/usr/bin/env bash
# The defaults of naps and the host copies' cache, with the fake driver: `cudanap run --nap N`
# alone naps lightly ([nap] depth = auto), its pinned host copy made ahead while it idles and kept
# after its wake; auto naps fully where the light copy would be over [memory] host_cache or a GPU
# is in an exclusive compute mode, and says why (status, log, metrics); the ready copies of the
# user's processes share host_cache, the copy of the process that worked last given back first; a
# nap short of host memory asks the others' copies back and naps; a copy given back as its owner
# wakes, a nap while the copy is being made, an exit while it is, lose nothing.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
export CUDANAP_FAKE_GPU_MIB=8000
mkdir "$T/fake"
pinned_mib() { echo $(($(cat "$T/fake/$1.pinned" 2> /dev/null || echo 0) >> 20)); }
pinned_is() { [ "$(pinned_mib "$1")" = "$2" ]; }
trim() { /usr/bin/kill -s USR1 -q 1668183154 "$1"; } # CN_SIGVAL_TRIM, as another process sends it
# holding NAME MIB: a target holding MIB of cuMemAlloc's, a word written at its start; its pid in $pid
holding() {
	start "$1" "$TARGET"
	eval "pid=\$${1}_pid"
	ask "$1" "drv vmm use 0"
	ask "$1" "drv alloc export $2"
	ask "$1" "drv vmm word A 0 ${3:-7}"
}
word_is() { ask "$1" "drv vmm word A 0"; [ "$REPLY" = "vmm word 0 $2" ]; }
quit() { # quit NAME: it ends, and what it held on the fake GPU with it
	local p
	eval "p=\$${1}_pid"
	ask "$1" quit
	wait "$p" 2> /dev/null
	rm -f "$T/fake/$p".*
}

# -- the defaults: `cudanap run --nap 6`, nothing else: light, made ahead, kept
write_ini "[log]" "level = info"
RUN_ARGS=(--nap 6)
holding A 600
check "idle 3 s: its host copy made ahead, before any nap" eventually 10 pinned_is "$pid" 600
is "$(fields "$pid" host_kept_mib:nap)" 600.000:awake "the status says it, awake"
log_like "$T/A.err" "made its host copy ahead \(600 MiB\): its next light nap copies at the bus's speed" "its log says so"
check "idle 6 s: napped lightly" napped "$pid"
is "$(field "$pid" nap_depth):$(field "$pid" depth_why)" "light:" "the default depth is light, no reason to go full"
log_like "$T/A.err" "light nap: 600 MiB in [0-9]+ pieces to the host copy made ready before it in [0-9.]+ ms: .*waiting for 0 threads" \
	"into the copy made ahead, no fault threads"
ask A "drv launch export 5" 30
is "$REPLY" "launch 0" "its next call wakes it"
check "woken" woke "$pid"
check "the word back" word_is A 7
is_field "$pid" host_kept_mib 600.000 "its copy kept after the wake (keep_host_copy is on by default)"
like "$("$CUDANAP" metrics -c "$T/job.ini")" $'\n'"cudanap_host_kept_bytes\\{pid=\"$pid\",[^}]*\\} 629145600"$'\n' \
	"cudanap metrics: 600 MiB kept ready"
quit A
RUN_ARGS=()

# -- auto naps fully over [memory] host_cache: 1 % of the host
bound=$(awk '/^MemTotal/ { print int($2 / 1024) }' /proc/meminfo)
mib=$((bound / 100 * 2 > 900 ? bound / 100 * 2 : 900))
export CUDANAP_FAKE_GPU_MIB=$((mib + 4000))
write_ini "[nap]" "idle_s = 600" "[memory]" "host_cache = 1%" "[log]" "level = info"
holding B "$mib"
cli2 nap "$pid"
is "$rc" 0 "napped ($out)"
check "asleep" napped "$pid"
is "$(field "$pid" nap_depth):$(field "$pid" depth_why)" "full:host cache" "fully: its copy would be over the share"
log_like "$T/B.err" "napped \(cudanap nap\): .*; full: its light copy \($mib MiB\) would be over \[memory\] host_cache \(1 % of the host.s [0-9]+ MiB: [0-9]+ MiB\)" \
	"the log says why"
cli2 status --json "$pid"
like "$out" "\"depth_why\":\"host cache\"" "status --json says it"
like "$("$CUDANAP" metrics -c "$T/job.ini")" $'\n'"cudanap_naps_full_total\\{pid=\"$pid\",[^}]*why=\"host cache\"\\} 1"$'\n' \
	"cudanap metrics counts the full nap by its reason"
ask B "drv launch export 5" 30
check "woken by its next call" woke "$pid"
check "the word back" word_is B 7
quit B
export CUDANAP_FAKE_GPU_MIB=8000

# -- ... and in an exclusive compute mode: a kept context would keep everyone else off the GPU
write_ini "[nap]" "idle_s = 600" "[log]" "level = info"
CUDANAP_FAKE_COMPUTE_MODE=3 holding C 500
cli2 nap "$pid"
check "napped" napped "$pid"
is "$(field "$pid" nap_depth):$(field "$pid" depth_why)" "full:exclusive" "an exclusive-process GPU: fully"
log_like "$T/C.err" "full: GPU 0 is in an exclusive compute mode: the context a light nap keeps would keep every other program off it" \
	"the log says why"
ask C "drv launch export 5" 30
check "woken" woke "$pid"
quit C

# -- two processes and the share: a copy over it is not kept; over it later, the copy of the one
# that worked last is given back
memory_cgroup 4000
in_cg() { echo "echo \$\$ > $cg/cgroup.procs && exec $TARGET"; }
limit() { # limit MIB: the cgroup's limit now
	if [ -f "$cg/memory.max" ]; then echo $(($1 << 20)) > "$cg/memory.max"; else echo $(($1 << 20)) > "$cg/memory.limit_in_bytes"; fi
}
nap_wake() { # nap_wake NAME: napped lightly, then woken by its next call
	local p
	eval "p=\$${1}_pid"
	cli2 nap "$p"
	eventually 10 light_napped "$p" || return 1
	ask "$1" "drv launch export 5" 30
	[ "$REPLY" = "launch 0" ] && woke "$p"
}
if [ -n "$cg" ]; then
	# make_room: their idleness is said (idle_since); min_idle_s keeps them from napping each other
	write_ini "[nap]" "make_room = true" "min_idle_s = 3600" "copy_ahead = false" \
		"[memory]" "host_cache = 30" "[log]" "level = info"
	for n in D E; do
		start "$n" bash -c "$(in_cg)"
		ask "$n" "drv vmm use 0"
		ask "$n" "drv alloc export 900"
		ask "$n" "drv vmm word A 0 5"
	done
	check "D napped and woken" nap_wake D
	is_field "$D_pid" host_kept_mib 900.000 "D keeps its copy: 900 of the share's 1200 MiB (30 % of the cgroup's 4000)"
	check "E napped and woken" nap_wake E
	is_field "$E_pid" host_kept_mib 0.000 "E does not keep its copy: with D's it would be over the share"
	unlike "$(field "$E_pid" message)" "kept for the next nap" "its wake's line does not say kept"
	limit 6000
	check "with the cgroup at 6000 MiB (a share of 1800), E napped and woken" nap_wake E
	is_field "$E_pid" host_kept_mib 900.000 "E keeps its copy too"
	limit 4000
	check "the cgroup back at 4000 MiB: E's copy, the one that worked last, given back" \
		eventually 10 fields_are "$E_pid" host_kept_mib 0.000
	log_like "$T/E.err" "let go of its ready host copy \(900 MiB\): the ready copies of this user's processes hold 1800 MiB, over \[memory\] host_cache \(30 % of cgroup [^:]*: 1200 MiB\)" \
		"E's log says why"
	is "$(field "$D_pid" host_kept_mib)" 900.000 "D keeps its copy: idle longer, napped first"

	# -- a nap short of host memory asks the others' ready copies back: E's nap needs 900 MiB and
	# 2500 beside it, which the cgroup has only once D's copy is given back
	write_ini "[nap]" "make_room = true" "min_idle_s = 3600" "copy_ahead = false" \
		"[preflight]" "host_margin_mib = 2500" "[log]" "level = info"
	cli2 nap "$E_pid"
	is "$rc" 0 "E napped ($out)"
	check "E asleep, lightly" eventually 10 light_napped "$E_pid"
	log_like "$T/E.err" "asked $D_pid to give back their ready host copies \(900 MiB\) for its nap's 900 MiB" "E asked D"
	log_like "$T/D.err" "let go of its ready host copy \(900 MiB\): another process of this user needs the host memory for its nap" \
		"D gave its copy back"
	is_field "$D_pid" host_kept_mib 0.000 "D holds none now"
	write_ini "[nap]" "make_room = true" "min_idle_s = 3600" "copy_ahead = false" "[log]" "level = info"
	ask E "drv launch export 5" 30
	check "E woken" woke "$E_pid"
	check "E's word back" word_is E 5
	check "D's word as it was" word_is D 5
	quit D
	quit E
else
	diag "no memory cgroup to limit here"
	for _ in $(seq 16); do skip "the share between two processes" "no memory cgroup"; done
fi

# -- a copy given back while its owner wakes: asked as the wake begins, not kept by the wake
write_ini "[nap]" "depth = light" "[log]" "level = info"
FAKE_PIN_MS=100 holding F 900 9
cli2 nap "$pid"
check "napped lightly" eventually 10 light_napped "$pid"
echo "drv launch export 5" >&"$F_in"
trim "$pid"
answer F 30
is "$REPLY" "launch 0" "the call that woke it answers"
check "woken" woke "$pid"
check "its copy not kept: given back" eventually 10 fields_are "$pid" host_kept_mib 0.000
check "nothing pinned" eventually 10 pinned_is "$pid" 0
check "its word back" word_is F 9
quit F

# -- a nap while its copy is being made ahead (8 chunks, 4 threads, a pin taking 400 ms): what
# is made is used, the rest readied by the nap, nothing pinned twice
write_ini "[nap]" "make_room = true" "min_idle_s = 2" "[log]" "level = info"
FAKE_PIN_MS=400 holding G 2000 3
check "making its copy ahead" eventually 10 fields_are "$pid" host_kept_mib 2000.000
cli2 nap "$pid"
is "$rc" 0 "napped while the copy was being made ($out)"
check "asleep, lightly" eventually 10 light_napped "$pid"
is "$(pinned_mib "$pid")" 2000 "all 2000 MiB pinned once"
ask G "drv launch export 5" 30
check "woken" woke "$pid"
check "its word back" word_is G 3
quit G

# -- an exit while its copy is being made: it waits for the chunks being pinned, then goes
FAKE_PIN_MS=1000 holding H 2000
check "making its copy ahead" eventually 10 fields_are "$pid" host_kept_mib 2000.000
echo quit >&"$H_in"
check "it quits while making its copy" eventually 15 gone "$pid"
wait "$pid"
is "$?" 0 "its exit is clean"
rm -f "$T/fake/$pid".*
unlike "$(cat "$T/H.err")" "entered while|abort|Segmentation" "no driver call after its teardown"

# -- a new context the GPU has no room for: the light napper's kept context is given back, its nap
# deepened to the driver's checkpoint (a context is 500 MiB here, the GPU 3000 MiB, a filler that
# does not nap holds 2200; no footprint of the fake's own)
export CUDANAP_FAKE_GPU_MIB=3000 CUDANAP_FAKE_CTX_MIB=500 CUDANAP_FAKE_FOOTPRINT_MIB=0
write_ini "[log]" "level = info"
holding Fill 1700 # with its context, 2200 MiB
write_ini "[nap]" "make_room = true" "min_idle_s = 1" "[restore]" "margin_mib = 0" "[log]" "level = info"
holding L 100 4
cli2 nap "$pid"
check "L napped lightly: 100 MiB given back, its 500 MiB context kept" eventually 10 light_napped "$pid"
start M "$TARGET"
ask M "drv vmm use 0" 30
is "$REPLY" "vmm use 0" "M's context made, once L's light nap is deepened"
is_field "$L_pid" nap_depth:state full:napping "L napped fully now"
log_like "$T/M.err" "made room on GPU 0 for 512 MiB \(cuDevicePrimaryCtxRetain\): napped $L_pid \(its light nap deepened\)" \
	"M's log says whom it deepened"
ask L "drv launch export 5" 30
is "$REPLY" "launch 0" "L's next call wakes it, where M's work leaves room"
check "L's word back" word_is L 4
quit M
quit L
quit Fill
export CUDANAP_FAKE_GPU_MIB=8000
unset CUDANAP_FAKE_CTX_MIB CUDANAP_FAKE_FOOTPRINT_MIB

# -- [memory] host_cache and [nap] copy_ahead in check-config
printf '[memory]\nhost_cache = 95\n' > "$T/bad.ini"
cli2 check-config "$T/bad.ini"
is "$rc:$out" "78:cudanap: $T/bad.ini:2: memory.host_cache: '95' is not a number of percent from 0 to 90" "a share over 90 %: one line"
printf '[memory]\nhost_cache = 40%%\n[nap]\ncopy_ahead = false\n' > "$T/good.ini"
cli2 check-config "$T/good.ini"
is "$rc" 0 "40% and copy_ahead = false are taken ($out)"
finish
