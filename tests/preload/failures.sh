#!/usr/bin/env bash
# What goes wrong: the fake driver's error model, lock timeouts, failed checkpoints and restores,
# broken INI files, processes without CUDA or without a driver, wrong pids.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"

# -- the fake driver answers as the real one was measured to (docs/DRIVER.md)
write_ini "[lock]" "timeout_ms = 200" "[hooks]" \
	"on_failure = echo \$CUDANAP_EVENT \$CUDANAP_STATE \$CUDANAP_RESULT >> $T/hook.failure"
start A "$TARGET" || diag "target did not start"
pid=$A_pid
sleep 60 & dead=$!; kill -9 $dead; wait $dead 2>/dev/null
is "$("$FAKECTL" "$FAKECUDA" state $dead)" CUDA_ERROR_OPERATING_SYSTEM "fake: a missing pid is OPERATING_SYSTEM"
is "$("$FAKECTL" "$FAKECUDA" state $$)" CUDA_ERROR_NOT_INITIALIZED "fake: a pid without CUDA is NOT_INITIALIZED"
is "$("$FAKECTL" "$FAKECUDA" state $pid)" "CUDA_SUCCESS 0" "fake: a CUDA pid is RUNNING"
is "$("$FAKECTL" "$FAKECUDA" unlock $pid)" CUDA_ERROR_ILLEGAL_STATE "fake: unlock while RUNNING is ILLEGAL_STATE"
is "$("$FAKECTL" "$FAKECUDA" checkpoint $pid)" CUDA_ERROR_ILLEGAL_STATE "fake: checkpoint while RUNNING is ILLEGAL_STATE"
is "$("$FAKECTL" "$FAKECUDA" restore $pid)" CUDA_ERROR_ILLEGAL_STATE "fake: restore while RUNNING is ILLEGAL_STATE"

# -- a lock that times out leaves the process running
ask A "kernel 3000"
cli suspend "$pid"
is "$rc" 1 "suspend during a long kernel fails"
like "$out" "CUDA_ERROR_NOT_READY: lock timed out after 200 ms.*the process keeps running \(state running\)" \
	"the lock timeout is reported in one line"
is "$(field "$pid" state)" running "state stays running"
ask A verify 5
is "$REPLY" "verify ok" "the program keeps running after the lock timeout"
eventually 20 has "$T/hook.failure" "failure running CUDA_ERROR_NOT_READY"
like "$(cat "$T/hook.failure" 2>/dev/null)" "failure running CUDA_ERROR_NOT_READY" "on_failure hook ran"
like "$(cat "$T/A.err")" "cudanap\[$pid\]: suspend failed: CUDA_ERROR_NOT_READY" "the failure is logged"

# -- a failed checkpoint is followed by an unlock (the driver leaves the process LOCKED)
ask A sync 10 # the kernel above ends
echo 801 > "$T/fake/fail_checkpoint"
cli suspend "$pid"
rm -f "$T/fake/fail_checkpoint"
is "$rc" 1 "a failed checkpoint fails the suspend"
like "$out" "CUDA_ERROR_NOT_SUPPORTED: checkpoint: operation not supported \(the driver cannot checkpoint a process that uses managed memory, CUDA IPC, MIG or MPS\) \(state running\)" \
	"reported with the driver's words and what they usually mean"
is "$("$FAKECTL" "$FAKECUDA" state $pid)" "CUDA_SUCCESS 0" "the process was unlocked: RUNNING"
ask A verify 5
is "$REPLY" "verify ok" "the program runs on with its data"

# -- a failed restore leaves the process checkpointed, and a later resume works
"$CUDANAP" suspend "$pid" > /dev/null
echo 2 > "$T/fake/fail_restore"
cli resume "$pid"
rm -f "$T/fake/fail_restore"
is "$rc" 1 "a failed restore fails the resume"
like "$out" "resume failed: CUDA_ERROR_OUT_OF_MEMORY: restore: out of memory \(state checkpointed\)" "reported truthfully"
cli resume "$pid"
is "$rc" 0 "a later resume succeeds"
ask A verify 5
is "$REPLY" "verify ok" "data intact after the retried resume"

# -- a resume whose INI is now broken is refused and the process stays checkpointed
"$CUDANAP" suspend "$pid" > /dev/null
printf '[restore]\ngpu_map = 0=\n' >> "$T/job.ini"
cli resume "$pid"
is "$rc" 1 "resume with a broken INI fails"
like "$out" "CONFIG_ERROR: $T/job.ini:[0-9]+: restore.gpu_map: .* \(state checkpointed\)" "the INI error names file, line and key"
is "$(field "$pid" state)" checkpointed "the process stays checkpointed"
write_ini "[lock]" "timeout_ms = 0"
cli resume "$pid"
is "$rc" 0 "resume works once the INI is fixed"
ask A verify 5
is "$REPLY" "verify ok" "data intact"

# -- a suspend whose INI is now broken is refused and the process runs on
printf '[lock]\ntimeout_ms = soon\n' >> "$T/job.ini"
cli suspend "$pid"
like "$out:$rc" "suspend failed: CONFIG_ERROR: $T/job.ini:[0-9]+: lock.timeout_ms: .*; the process keeps running \(state running\):1$" \
	"a suspend re-reads the INI and refuses a broken one in one line"
ask A verify 5
is "$REPLY" "verify ok" "the process runs on"
# ... and so are a prepare and a nap, which would have suspended it too
cli prepare "$pid"
like "$out:$rc" "prepare failed: CONFIG_ERROR: $T/job.ini:[0-9]+: lock.timeout_ms: .*; the process keeps running \(state running\):1$" \
	"a prepare with a broken INI: the process keeps running, it says"
cli nap "$pid"
like "$out:$rc" "nap failed: CONFIG_ERROR: $T/job.ini:[0-9]+: lock.timeout_ms: .*; the process keeps running \(state running\):1$" \
	"a nap with a broken INI: the process keeps running, it says"
is "$(field "$pid" state):$(field "$pid" result):$(field "$pid" result_code)" "running:CONFIG_ERROR:-4" \
	"status: running, the result and its code"
ask A verify 5
is "$REPLY" "verify ok" "the process runs on"
write_ini "[lock]" "timeout_ms = 0"

# -- lock without a timeout (read from the INI at that suspend) waits for the kernel
ask A "kernel 700"
cli suspend "$pid"
is "$rc" 0 "with timeout_ms = 0 the lock waits for the kernel"
like "$(field "$pid" lock_ms)" '^([5-9][0-9]{2}|[0-9]{4,})\.' "the lock took the kernel's time"
"$CUDANAP" resume "$pid" > /dev/null
ask A quit

# -- a process without CUDA answers no-cuda and keeps running
start B "$TARGET" --no-cuda
kill -USR1 "$B_pid"
settle "$B_pid" 1
is "$(field "$B_pid" state)" no-cuda "no-cuda state"
is "$(field "$B_pid" result)" CUDA_ERROR_NOT_INITIALIZED "result names the driver's answer"
ask B ping
is "$REPLY" pong "the process without CUDA keeps running"
cli suspend "$B_pid"
is "$rc" 1 "cudanap suspend of a no-cuda process exits 1"
like "$out" "not initialised CUDA: nothing to suspend \(state no-cuda\)" "and says why"
like "$(cat "$T/B.err")" "cudanap\[$B_pid\]: this process has not initialised CUDA" "logged"
ask B quit

# -- no driver at all
CUDANAP_LIBCUDA=$T/nonexistent/libcuda.so.1 start C "$TARGET"
kill -USR1 "$C_pid"
settle "$C_pid" 1
is "$(field "$C_pid" result)" NO_DRIVER "a missing driver is NO_DRIVER"
like "$(field "$C_pid" message)" "cannot load the CUDA driver .*nonexistent" "and says what was tried"
ask C verify
is "$REPLY" "verify ok" "the program keeps running without a driver"
ask C quit

# -- broken INI at startup: the program does not start, one line, exit 78
printf '[lock]\ntimeout_ms = soon\n' > "$T/bad.ini"
err=$(CUDANAP_CONFIG=$T/bad.ini LD_PRELOAD=$PRELOAD /bin/true 2>&1); rc=$?
is "$rc" 78 "broken INI under LD_PRELOAD: exit 78"
is "$err" "cudanap: $T/bad.ini:2: lock.timeout_ms: 'soon' is not a number of milliseconds from 0 to 86400000" \
	"one error line with file, line and key"
err=$("$CUDANAP" run -c "$T/bad.ini" -- /bin/true 2>&1); rc=$?
is "$rc" 78 "cudanap run with a broken INI: exit 78"
"$CUDANAP" check-config "$T/bad.ini" > /dev/null 2>&1; rc=$?
is "$rc" 78 "check-config of a broken INI: exit 78"
is "$("$CUDANAP" check-config "$T/job.ini")" "$T/job.ini: ok" "check-config of a good INI"
ln -s "$T/status" "$T/status-link"
printf '[status]\ndir = %s\n' "$T/status-link" > "$T/link.ini"
err=$(CUDANAP_CONFIG=$T/link.ini LD_PRELOAD=$PRELOAD /bin/true 2>&1); rc=$?
is "$rc" 0 "a symlinked status dir: the program runs, without cudanap"
like "$err" "^cudanap: status dir .*status-link: is a symlink.*; running without cudanap \(\[status\] if_unusable = run\)$" \
	"and says so in one line"
printf 'if_unusable = refuse\n' >> "$T/link.ini"
err=$(CUDANAP_CONFIG=$T/link.ini LD_PRELOAD=$PRELOAD /bin/true 2>&1); rc=$?
is "$rc" 78 "with if_unusable = refuse it is refused at start"
err=$(CUDANAP_CONFIG=$T/missing.ini LD_PRELOAD=$PRELOAD /bin/true 2>&1); rc=$?
is "$rc" 78 "a missing INI is refused at start"

# -- a hook that hangs is killed at its timeout, and the job goes on
write_ini "[hooks]" "on_suspended = sleep 30; echo late > $T/late" "timeout_ms = 300" \
	"[log]" "target = $T/cn.log" "level = info"
start E "$TARGET"
kill -USR1 "$E_pid"
settle "$E_pid" 1
eventually 20 has "$T/cn.log" "suspended hook killed"
like "$(cat "$T/cn.log")" "cudanap\[$E_pid\]: suspended hook killed after 300 ms" "a hung hook is killed and logged"
check "the hook's whole process group was killed" test ! -e "$T/late"
kill -USR2 "$E_pid"
settle "$E_pid" 2
ask E verify
is "$REPLY" "verify ok" "the job resumes after the hung hook"
check "log lines went to the [log] target file, not stderr" \
	bash -c "grep -q 'resumed in' '$T/cn.log' && ! grep -q cudanap '$T/E.err'"
ask E quit
write_ini "[log]" "level = error"
start F "$TARGET"
"$CUDANAP" suspend "$F_pid" > /dev/null
"$CUDANAP" resume "$F_pid" > /dev/null
ask F quit
is "$(cat "$T/F.err")" "" "level = error keeps suspend and resume quiet"

# -- preflight: a JAX process suspends like any other (its driver calls wait at the gate while it
# sleeps; an INI that still says allow_jax loads); a refusal comes before the lock and runs the
# on_failure hook
write_ini "[hooks]" "on_failure = echo \$CUDANAP_RESULT > $T/refused" "[preflight]" "allow_jax = false"
start J "$TARGET"
mkdir -p "$T/site/jaxlib" && head -c 4096 /dev/zero > "$T/site/jaxlib/xla_extension.so"
ask J "map $T/site/jaxlib/xla_extension.so"
is "$REPLY" "map ok" "a JAX runtime is mapped in the target"
cli suspend "$J_pid"
is "$rc" 0 "a JAX process is not refused (allow_jax = false is accepted and changes nothing)"
"$CUDANAP" resume "$J_pid" > /dev/null
ask J verify
is "$REPLY" "verify ok" "data intact"
ask J "ipc open"
cli suspend "$J_pid"
like "$out:$rc" "REFUSED.*:1$" "a process holding another's GPU memory is refused"
is "$("$FAKECTL" "$FAKECUDA" state "$J_pid")" "CUDA_SUCCESS 0" "refused before the lock: the driver never saw it"
eventually 20 has "$T/refused" REFUSED
is "$(cat "$T/refused" 2>/dev/null)" REFUSED "on_failure hook ran"
ask J quit

# -- preflight: a process with NCCL communicators is refused, found by its threads or its segments
write_ini
start N "$TARGET"
ask N "thread pt_nccl_watchdg"
is "$REPLY" "thread ok" "a thread named as PyTorch names its NCCL watchdog runs in the target"
cli suspend "$N_pid"
like "$out:$rc" "^$N_pid: suspend failed: REFUSED: refusing to suspend a process with NCCL communicators whose transports the driver cannot restore: NCCL_P2P_DISABLE is unset .*\[nccl\] suspendable = true in its INI .*allow_nccl = true to try anyway\) \(state running\):1$" \
	"an NCCL process with NCCL's default transports is refused in one line that names the switch"
ask N quit
start N "$TARGET"
mkdir -p "$T/dev/shm" && head -c 4096 /dev/zero > "$T/dev/shm/nccl-AbCdEf"
ask N "map $T/dev/shm/nccl-AbCdEf"
cli suspend "$N_pid"
like "$out:$rc" "REFUSED: refusing to suspend a process with NCCL.*:1$" "so is one with an NCCL segment mapped"
is "$("$FAKECTL" "$FAKECUDA" state "$N_pid")" "CUDA_SUCCESS 0" "before the lock"
write_ini "[preflight]" "allow_nccl = true"
kill -USR2 "$N_pid"
settle "$N_pid" 2
cli suspend "$N_pid"
is "$rc" 0 "allow_nccl = true lets it suspend"
"$CUDANAP" resume "$N_pid" > /dev/null
ask N quit

# -- preflight: a process holding GPU memory of another (CUDA IPC, a shareable handle) is refused
# before the lock, in one line that names the first import; NCCL's own imports are NCCL's route's
write_ini
start I "$TARGET"
ask I "ipc nccl"
is "$REPLY" "ipc ok" "the fake NCCL imports a peer's buffer through the runtime's name"
ask I "ipc open"
is "$REPLY" "ipc ok" "the app opens another process's buffer (cudaIpcOpenMemHandle)"
cli suspend "$I_pid"
like "$out:$rc" "^$I_pid: suspend failed: REFUSED: refusing to suspend a process that holds GPU memory imported from another process \(1 import, the first by cudaIpcOpenMemHandle in fake_target\): the driver checkpoints an importer but cannot restore it; release the imports first \(state running\):1$" \
	"refused in one line naming the call and the program; NCCL's import is not counted"
is "$("$FAKECTL" "$FAKECUDA" state "$I_pid")" "CUDA_SUCCESS 0" "refused before the lock"
ask I "ipc dopen"
cli suspend "$I_pid"
like "$out:$rc" "REFUSED: .*\(2 imports, the first by cudaIpcOpenMemHandle in fake_target\).*:1$" \
	"the driver's cuIpcOpenMemHandle counts too"
ask I verify
is "$REPLY" "verify ok" "the refused program runs on"
ask I quit
start I "$TARGET"
ask I "ipc dclose"
is "$REPLY" "ipc failed" "closing what was never opened fails"
ask I "ipc open"
ask I "ipc close"
is "$REPLY" "ipc ok" "the buffer is closed again"
cli suspend "$I_pid"
is "$rc" 0 "with its imports closed it suspends (the failed close counted nothing)"
cli resume "$I_pid"
is "$rc" 0 "and resumes"
ask I verify
is "$REPLY" "verify ok" "data intact"
ask I "ipc import"
cli suspend "$I_pid"
like "$out:$rc" "REFUSED: .*\(1 import, the first by cuMemImportFromShareableHandle in fake_target\).*\(state running\):1$" \
	"an imported shareable handle is refused too"
ask I quit

# -- the controller program missing: each signal answered with the error, never fatal
mkdir "$T/lonely" && cp "$LIBCUDANAP" "$T/lonely/"
write_ini
CUDANAP_PRELOAD=$T/lonely/libcudanap.so start L "$TARGET"
like "$(cat "$T/L.err")" "cudanap-ctl is neither beside libcudanap.so nor in .*every suspend will fail" \
	"a library without its controller says so at start"
cli suspend "$L_pid"
like "$out:$rc" "^$L_pid: suspend failed: NO_CONTROLLER: cannot start .*cudanap-ctl: No such file or directory.*:1$" \
	"a suspend without a controller fails in one line"
ask L verify
is "$REPLY" "verify ok" "and the app runs on"
ask L quit

# -- wrong pids
sleep 60 & plain=$!
cli suspend $dead
is "$out:$rc" "$dead: no such process:1" "a pid that does not exist"
cli suspend $plain
like "$out:$rc" "^$plain: not running under cudanap.*:1$" "a pid not under cudanap"
"$CUDANAP" suspend 12abc > /dev/null 2>&1; rc=$?
is "$rc" 2 "a pid that is not a number is a usage error"
kill $plain
finish
