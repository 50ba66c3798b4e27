#!/usr/bin/env bash
# The real driver: a CUDA program holding CUDANAP_GPU_TEST_GIB (default 8) GiB of a verifiable
# pattern is suspended by kill -USR1 and resumed by kill -USR2; memory freed, data intact, CUDA
# still working; identity gpu_map; a prepared suspend; a long kernel makes the lock time out; hooks
# fire; the driver-API and shared-cudart builds too.
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ -n "${HOLDMEM:-}" ] && [ -x "$HOLDMEM" ] || skip_all "CUDA test programs not built (no nvcc when meson set up)"
gib=${CUDANAP_GPU_TEST_GIB:-8}
diag "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -n1), $gib GiB"

used_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n1; }

hooks=("[hooks]"
	"on_suspended = echo \$CUDANAP_EVENT \$CUDANAP_STATE \$CUDANAP_RESULT >> $T/hooks"
	"on_resumed = echo \$CUDANAP_EVENT \$CUDANAP_STATE \$CUDANAP_RESULT >> $T/hooks"
	"on_failure = echo \$CUDANAP_EVENT \$CUDANAP_STATE \$CUDANAP_RESULT >> $T/hooks")
write_ini "[lock]" "timeout_ms = 2000" "${hooks[@]}"

# -- 1. runtime API, static cudart: the main cycle by plain kill
HOLDMEM_TICKS=$T/ticks start A "$HOLDMEM" "$gib"
ok $? "holdmem ($gib GiB) starts under cudanap"
pid=$A_pid
held=$(gpu_mib "$pid") total_before=$(used_mib)
diag "holds $held MiB on the GPU (GPU total used $total_before MiB)"
check "the process holds its memory on the GPU" test "$held" -ge $((gib * 1024))

# -- 0. asked before any suspend: its memory now, would suspend, the estimates; nothing changes
out=$("$CUDANAP" status "$pid")
like "$out" "
$pid +running .* +[0-9]+ +yes [0-9.]+/[0-9.]+ " "cudanap status before any suspend: would suspend, with estimates"
now=$(field "$pid" gpu_now_mib)
now=${now%.*}
check "its GPU memory now: $now MiB, what nvidia-smi shows ($held)" test "$now" -ge $((held - 16)) -a "$now" -le $((held + 16))
like "$(field "$pid" gpu_model)" "^NVIDIA " "the GPU's model: $(field "$pid" gpu_model)"
like "$(field "$pid" host_need_mib):$(field "$pid" host_room_mib)" "^[0-9.]+:[0-9.]+$" \
	"the host copy's need and room: $(field "$pid" host_need_mib) of $(field "$pid" host_room_mib) MiB ($(field "$pid" host_bound))"
est_s=$(field "$pid" est_suspend_s) est_r=$(field "$pid" est_resume_s)
like "$est_s:$est_r" "^[0-9.]+:[0-9.]+$" "estimates printed: suspend $est_s s, resume $est_r s ($(field "$pid" est_source))"
seq=$(field "$pid" seq) ts=$(field "$pid" timestamp)
cli suspend --dry-run "$pid"
like "$rc:$out" "^0:$pid: would suspend: [0-9]+ MiB on GPU [0-9]+; host copy [0-9]+ MiB of [0-9]+ MiB free" "suspend --dry-run: $out"
is "$(field "$pid" state):$(field "$pid" seq):$(field "$pid" timestamp)" "running:$seq:$ts" \
	"the dry run changed nothing: state, actions, the last action's time"
is "$(gpu_mib "$pid")" "$held" "nor its GPU memory"
ask A work 60
is "$REPLY" "work ok" "and CUDA works"
kill -USR1 "$pid"
check "kill -USR1: suspended" settle "$pid" 1 300
is "$(field "$pid" state):$(field "$pid" result)" "checkpointed:ok" "state checkpointed, result ok"
after=$(gpu_mib "$pid") total_after=$(used_mib)
diag "estimated $est_s s (a fresh machine's first suspend pays for its host pages: bench-estimate measures after a warm-up)"
diag "suspend: $(in_s "$(field "$pid" total_ms)") s (lock $(field "$pid" lock_ms) ms, checkpoint $(in_s "$(field "$pid" checkpoint_ms)") s); GPU: process $after MiB, total $total_after MiB"
check "nvidia-smi shows the memory freed (process <= 4 MiB)" test "$after" -le 4
staged=$(field "$pid" staged_mib)
diag "host copy staged by cudanap: $staged MiB, prefault $(field "$pid" prefault_ms) ms"
check "the driver's host copy was staged in huge pages (fast path engaged)" \
	test "${staged%.*}" -ge $((gib * 1024))
check "the GPU's used memory fell by the footprint" test $((total_before - total_after)) -ge $((gib * 1024 * 9 / 10))
ask A work 3
is "$REPLY" "" "a CUDA call blocks while suspended"
t0=$(cat "$T/ticks"); sleep 0.5; t1=$(cat "$T/ticks")
check "CPU threads keep running while suspended ($t0 -> $t1 ticks)" test "$t1" -gt "$t0"
kill -USR2 "$pid"
check "kill -USR2: resumed" settle "$pid" 2 300
is "$(field "$pid" state):$(field "$pid" result)" "running:ok" "state running, result ok"
diag "resume estimated $est_r s"
diag "resume: $(in_s "$(field "$pid" total_ms)") s (restore $(in_s "$(field "$pid" restore_ms)") s, unlock $(field "$pid" unlock_ms) ms)"
answer A 60
is "$REPLY" "work ok" "the blocked CUDA call completes after resume and works"
ask A verify 120
is "$REPLY" "verify ok" "all $gib GiB intact after resume"
check "the memory is back on the GPU" test "$(gpu_mib "$pid")" -ge $((gib * 1024))
like "$(tr '\n' ' ' < "$T/hooks")" "suspended checkpointed ok resumed running ok" "hooks fired"
like "$(cat "$T/A.err")" "cudanap\[$pid\]: suspended in .*cudanap\[$pid\]: resumed in" "log lines"

# -- 2. identity gpu_map by index, through the CLI
write_ini "[lock]" "timeout_ms = 2000" "[restore]" "gpu_map = 0=0" "${hooks[@]}"
cli suspend --wait "$pid"
is "$rc" 0 "cudanap suspend --wait"
diag "$out"
cli resume --wait "$pid"
is "$rc" 0 "cudanap resume with gpu_map = 0=0 (completed to every GPU)"
diag "$out"
ask A verify 120
is "$REPLY" "verify ok" "data intact after identity remap"

# -- 2b. notice ahead: cudanap prepare faults the host copy in, the suspend then only copies
write_ini "[lock]" "timeout_ms = 2000" "[log]" "level = debug" "${hooks[@]}"
cli prepare "$pid"
is "$rc:$(field "$pid" prepared):$(field "$pid" state)" "0:true:running" "cudanap prepare: prepared, still running"
diag "$out"
ask A work 60
is "$REPLY" "work ok" "CUDA works while prepared"
cli suspend "$pid"
is "$rc" 0 "the prepared suspend"
check "it frees the GPU (process <= 4 MiB)" test "$(gpu_mib "$pid")" -le 4
diag "prepared suspend: $out"
like "$(cat "$T/A.err")" "host copy: [0-9]+ MiB, in a kept or prepared buffer" "the driver's copy went into the prepared buffer"
cli resume "$pid"
is "$rc" 0 "resume"
diag "$out"
ask A verify 120
is "$REPLY" "verify ok" "all $gib GiB intact after a prepared suspend"

# -- 3. a long kernel: the lock times out, the program keeps running
ask A "spin 8000"
cli suspend "$pid"
is "$rc" 1 "suspend during an 8 s kernel fails"
like "$out" "CUDA_ERROR_NOT_READY: lock timed out after 2000 ms.*\(state running\)" "lock timed out, state running"
diag "$out"
ask A sync 30
is "$REPLY" "sync ok" "the kernel finishes normally"
ask A verify 120
is "$REPLY" "verify ok" "data intact"
ask A work
is "$REPLY" "work ok" "CUDA keeps working"
like "$(tail -n1 "$T/hooks")" "failure running CUDA_ERROR_NOT_READY" "on_failure hook fired"
ask A quit
wait "$pid"

# -- 4. driver API only, and cudart linked shared, with CUDA_VISIBLE_DEVICES set in the app
write_ini "[restore]" "gpu_map = 0=0"
for v in "driver:$HOLDMEM --driver 1" "shared:$HOLDMEM_SHARED 1"; do
	name=${v%%:*}
	# shellcheck disable=SC2086
	CUDA_VISIBLE_DEVICES=0 start B ${v#*:} || diag "$name did not start"
	kill -USR1 "$B_pid"
	settle "$B_pid" 1 120
	st=$(field "$B_pid" state) freed=no
	[ "$(gpu_mib "$B_pid")" -le 4 ] && freed=yes
	kill -USR2 "$B_pid"
	settle "$B_pid" 2 120
	ask B verify 60
	is "$st:$freed:$(field "$B_pid" state):$REPLY" "checkpointed:yes:running:verify ok" \
		"$name: suspended (GPU memory freed), resumed, data intact"
	ask B quit
	wait "$B_pid"
done
finish
