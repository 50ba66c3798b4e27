#!/usr/bin/env bash
# The playground `meson devenv -C build` gives a newcomer: the fake driver named for the programs
# cudanap starts, cudanap and fake_target on PATH, the explanation printed at bash's first prompt;
# and the README's walkthrough, its lines read from README.md and run as a user types them:
# fake_target naps after its idle seconds, a typed command wakes it, suspend, resume and nap work.
. "$(dirname "$0")/../lib.sh"
command -v meson > /dev/null || skip_all "no meson to run meson devenv"
dump=$(meson devenv -C "$BUILD_ROOT" --dump 2>&1) || skip_all "meson devenv --dump: $dump"
eval "$dump"
is "$CUDANAP_LIBCUDA:$CUDANAP_LIBNVML" "$FAKECUDA:$FAKECUDA" "the fake driver and NVML named"
check "its state directory is there ($CUDANAP_FAKE_DIR)" test -d "$CUDANAP_FAKE_DIR"
is "$(command -v cudanap):$(command -v fake_target)" "$CUDANAP:$TARGET" "cudanap and fake_target on PATH"
readme=$CUDANAP_FAKE_DIR/README.txt
is "$PROMPT_COMMAND" "cat $readme; unset PROMPT_COMMAND" "bash says the explanation at its first prompt, once"
like "$(cat "$readme")" "no GPU needed.*cudanap run --nap 10 -- fake_target.*verify .*wakes it" \
	"which says how to play"
if command -v script > /dev/null; then
	out=$(SHELL=/bin/bash script -qec "meson devenv -C '$BUILD_ROOT'" /dev/null <<< "exit" 2>&1)
	like "$out" "cudanap playground \(meson devenv\): no GPU needed" "meson devenv's shell prints it"
else
	skip "meson devenv's shell prints it" "no script(1) for a terminal"
fi

# -- the README's walkthrough, in a state directory of the test's own (nothing left in the build)
export CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
STATUS_DIR=$XDG_RUNTIME_DIR/cudanap # cudanap's default, as a user's
walk=$(sed -n '/^\*\*A playground without a GPU\.\*\*/,/playground\.sh` runs these lines/p' \
	"$(dirname "$0")/../../README.md")
lines=$(sed -n 's/^\$ \([^#]*[^# ]\) *\(#.*\)\{0,1\}$/\1/p' <<< "$walk")
is "$(tr '\n' ';' <<< "$lines")" "meson devenv -C build;cudanap run --nap 10 -- fake_target;cudanap status;cudanap metrics;" \
	"the README's playground: the lines this test runs"
read -ra run <<< "$(sed -n 2p <<< "$lines")"
mkfifo "$T/in" "$T/out"
"${run[@]}" < "$T/in" > "$T/out" 2> "$T/err" &
exec {fin}> "$T/in" {fout}< "$T/out"
read -r -t 60 -u "$fout" line || line=
like "$line" "^ready [0-9]+$" "$(sed -n 2p <<< "$lines"): it says ready PID, as the README shows"
pid=${line#ready }
status_row() { "$CUDANAP" status 2> /dev/null | awk -v p="$pid" '$1 == p'; }
row_like() { [[ $(status_row) =~ $1 ]]; }
eventually 10 row_like " idle [0-9]+s "
like "$(status_row)" "^$pid +running .* idle [0-9]+s .* fake_target$" "cudanap status: it runs, idle since its last driver call"
eventually 30 row_like " napping "
like "$(status_row)" "^$pid +napping .* napping .*1/0" "and naps after its 10 idle seconds, by itself"
out=$("$CUDANAP" metrics)
like "$out" "cudanap_process_state\{[^}]*pid=\"$pid\"[^}]*state=\"napping\"[^}]*\} 1" "cudanap metrics says it naps"
typed=$(grep -o 'Type `[a-z]*`' <<< "$walk" | tr -d '`')
is "$typed" "Type verify" "the README has the user type verify"
echo verify >&"$fin"
read -r -t 20 -u "$fout" line || line=
is "$line" "verify ok" "typed verify: the call wakes it and answers"
woke "$pid"
is "$(field "$pid" wakes)" 1 "woken once, by that call"
tries=$(grep -o '`cudanap [a-z]* 4711`' <<< "$walk" | tr -d '`' | tr '\n' ';')
is "$tries" "cudanap suspend 4711;cudanap resume 4711;cudanap nap 4711;" "then the README's suspend, resume and nap"
out=$("$CUDANAP" suspend "$pid")
like "$out" "^$pid: suspended in" "cudanap suspend PID"
out=$("$CUDANAP" resume "$pid")
like "$out" "^$pid: resumed in" "cudanap resume PID"
"$CUDANAP" nap "$pid" > /dev/null
check "cudanap nap PID" napped "$pid"
echo quit >&"$fin"
eventually 10 gone "$pid"
check "quit: it exits, its status file gone" test ! -e "$STATUS_DIR/$pid.json"
finish
