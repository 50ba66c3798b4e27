#!/usr/bin/env bash
# The playground `meson devenv -C build` gives a newcomer: the fake driver named for the programs
# cudanap starts, cudanap and fake_target on PATH, the explanation printed at bash's first prompt;
# and what the explanation says of the fake's limits is what happens: fake_target's own commands
# wait while it naps and do not wake it, a driver call does, and so does cudanap resume.
. "$(dirname "$0")/../lib.sh"
command -v meson > /dev/null || skip_all "no meson to run meson devenv"
dump=$(meson devenv -C "$BUILD_ROOT" --dump 2>&1) || skip_all "meson devenv --dump: $dump"
eval "$dump"
is "$CUDANAP_LIBCUDA:$CUDANAP_LIBNVML" "$FAKECUDA:$FAKECUDA" "the fake driver and NVML named"
check "its state directory is there ($CUDANAP_FAKE_DIR)" test -d "$CUDANAP_FAKE_DIR"
is "$(command -v cudanap):$(command -v fake_target)" "$CUDANAP:$TARGET" "cudanap and fake_target on PATH"
readme=$CUDANAP_FAKE_DIR/README.txt
is "$PROMPT_COMMAND" "cat $readme; unset PROMPT_COMMAND" "bash says the explanation at its first prompt, once"
like "$(cat "$readme")" "no GPU needed.*cudanap run --nap 10 -- fake_target.*Limits of the fake: .*never wake a nap" \
	"which says how to play, and the fake's limits"
if command -v script > /dev/null; then
	out=$(SHELL=/bin/bash script -qec "meson devenv -C '$BUILD_ROOT'" /dev/null <<< "exit" 2>&1)
	like "$out" "cudanap playground \(meson devenv\): no GPU needed" "meson devenv's shell prints it"
else
	skip "meson devenv's shell prints it" "no script(1) for a terminal"
fi

# -- the limits, as written: in a state directory of the test's own (nothing left in the build)
export CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
write_ini
start A fake_target
"$CUDANAP" nap -c "$T/job.ini" "$A_pid" > /dev/null
check "napping" napped "$A_pid"
echo verify >&"$A_in"
answer A 2 # nothing is to happen: the fake's own call waits, unseen by the gate
is "$REPLY:$(field "$A_pid" state)" ":napping" "verify, the fake's own call: it waits, and does not wake the nap"
"$CUDANAP" resume -c "$T/job.ini" "$A_pid" > /dev/null
answer A 20
is "$REPLY" "verify ok" "cudanap resume: it runs again and the waiting call answers"
"$CUDANAP" nap -c "$T/job.ini" "$A_pid" > /dev/null
napped "$A_pid"
ask A "drv launch export 5"
is "$REPLY" "launch 0" "a driver call, which the gate sees, wakes it"
woke "$A_pid"
ask A quit
finish
