#!/usr/bin/env bash
# The command line's first hour, with the fake driver: INI files that are not files, check-config
# as strict as a start, usage errors in one line, help, a PID given twice, the status table with
# long results and multi-line commands, and --json for suspend, resume and prepare.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
write_ini

# -- INI files that cannot be
cli2 check-config "$T"
is "$rc:$out" "78:cudanap: $T: a directory, not an INI file" "check-config DIR fails in one line"
cli2 check-config /dev/null
like "$rc:$out" "^78:cudanap: /dev/null: not a regular file" "check-config /dev/null fails"
cli2 run -c "$T" -- true
is "$rc:$out" "78:cudanap: $T: a directory, not an INI file" "run -c DIR fails before running anything"
printf 'timeout_ms = 3\n[lock]\n' > "$T/nosect.ini"
cli2 check-config "$T/nosect.ini"
is "$rc:$out" "78:cudanap: $T/nosect.ini:1: timeout_ms: a key before any [section]" \
	"a key before any section says so"
printf '[status]\ndir = /nonexistent/x\n' > "$T/nodir.ini"
cli2 check-config "$T/nodir.ini"
is "$rc:$out" "78:cudanap: $T/nodir.ini: status dir /nonexistent/x: cannot be created: /nonexistent is not a directory" \
	"check-config checks [status] dir as a start would"
cli2 run -c "$T/nodir.ini" -- true
like "$rc:$out" "^0:cudanap: status dir /nonexistent/x: cannot create: .*; running without cudanap \(\[status\] if_unusable = run\)$" \
	"and a start runs the program without cudanap, saying why in one line"
printf '[status]\ndir = /nonexistent/x\nif_unusable = refuse\n' > "$T/nodir-refuse.ini"
cli2 run -c "$T/nodir-refuse.ini" -- true
like "$rc:$out" "^78:cudanap: status dir /nonexistent/x: cannot create: .*; not starting \(\[status\] if_unusable = refuse\)$" \
	"with [status] if_unusable = refuse it does not start"
printf '[status]\ndir = %s/new\n' "$T" > "$T/newdir.ini"
cli2 check-config "$T/newdir.ini"
is "$rc:$out" "0:$T/newdir.ini: ok" "a status dir that a start can make is ok"
check "and check-config made nothing" test ! -e "$T/new"

# -- usage errors: one line, the command's name, where the help is
cli2 suspend --bogus 1
is "$rc:$out" "2:cudanap suspend: unknown option '--bogus'; see 'cudanap suspend --help'" \
	"an unknown long option"
cli2 status -x
is "$rc:$out" "2:cudanap status: unknown option '-x'; see 'cudanap status --help'" "an unknown short option"
cli2 resume --timeout
is "$rc:$out" "2:cudanap resume: --timeout needs a value; see 'cudanap resume --help'" "a missing value"
cli2 suspend
like "$rc:$out" "^2:cudanap suspend: which processes\?" "no process given"
cli2 suspend --to-disk /var/tmp 1234
is "$rc:$out" "2:cudanap: '/var/tmp' is not a process id (a directory for --to-disk is given as --to-disk=/var/tmp)" \
	"--to-disk DIR hints at --to-disk=DIR"
cli2 resume --gpu-map 0=x 1
like "$rc:$out" "^2:cudanap: --gpu-map: '0=x': " "--gpu-map is checked before anything is sent"
cli2 suspend --gpu-map 0=1 1
is "$rc:$out" "2:cudanap: --gpu-map is for resume" "and is for resume only"

# -- help
is "$("$CUDANAP" help suspend)" "$("$CUDANAP" suspend --help)" "cudanap help suspend is suspend's help"
like "$("$CUDANAP" help suspend)" "--json" "which lists --json"
like "$("$CUDANAP" help)" "--version" "the main help lists --version"
like "$("$CUDANAP" help)" "  help \[COMMAND\] " "and help"

# -- one vocabulary of states: the words the status file writes (base/outcome.c, the only place
# they are made), each named by status's help, the man page and the README, the napping one too
src=$(dirname "$0")/../..
words=$(sed -n '/CN_NAMES_DEFINE(cn_outcome_state,/,/)$/p' "$src/base/outcome.c" | grep -o '"[a-z-]*"' | tr -d '"' | xargs)
is "$words" "running locked checkpointed failed no-cuda napping" "the states' words, napping its own"
help=$("$CUDANAP" status --help | tr '\n' ' ')
man=$(tr '\n' ' ' < "$src/docs/cudanap.1.scd")
readme=$(tr '\n' ' ' < "$src/README.md")
for w in $words; do
	check "status --help names the state $w" grep -qw -- "$w" <<< "$help"
	check "so do the man page's status and status file" test "$(grep -o "\*$w\*" <<< "$man" | wc -l)" -ge 2
	check "and the README's status file" grep -q "\`$w\`" <<< "$readme"
done
out=$("$CUDANAP" help | grep -E '^  (run|suspend|resume|prepare|status|check-config|help|--version) ' |
	awk '{ print substr($0, 37, 1) == " " && substr($0, 38, 1) != " " }' | sort -u)
is "$out" 1 "the main help's descriptions start in one column"
cli2 help nothing
is "$rc:$out" "2:cudanap: no command 'nothing'; see 'cudanap help'" "help for a command that does not exist"

# -- a PID given twice is acted on once
start A "$TARGET"
# the README's status-file example has every key a status file has, and no other
keys() { grep -o '"[a-z_]*":' | sort -u | tr -d '":\n'; }
readme=$(dirname "$0")/../../README.md
is "$(sed -n '/^```json$/,/^```$/p' "$readme" | keys)" "$(keys < "$T/status/$A_pid.json")" \
	"the README's status file example has the keys of a status file"
cli suspend "$A_pid" "$A_pid"
like "$rc:$out" "^0:$A_pid: suspended in [^
]*$" "suspend PID PID: one line, one suspend"
is "$(field "$A_pid" seq)" 1 "one action taken"
cli suspend 1 1
is "$rc:$out" "1:1: not running under cudanap (no status file); start it with 'cudanap run' or give its INI with -c" \
	"suspend 1 1: one line, no rollback of nothing"
out=$("$CUDANAP" status 1 2> "$T/err"); rc=$?
is "$rc:$out:$(cat "$T/err")" "1::cudanap: 1: not a running cudanap process" \
	"status of a process not under cudanap: one line on stderr, no bare header"
out=$("$CUDANAP" status "$A_pid" 1 2> "$T/err"); rc=$?
is "$rc:$(wc -l <<< "$out"):$(cat "$T/err")" "1:2:cudanap: 1: not a running cudanap process" \
	"status of one that is and one that is not: its row, and the other's line"

# -- --json
if command -v python3 > /dev/null; then
	json() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }
	cli resume --json "$A_pid"
	is "$rc" 0 "resume --json exits 0"
	is "$(json 'd["action"], d["processes"][0]["pid"], d["processes"][0]["ok"], d["processes"][0]["outcome"], d["processes"][0]["status"]["state"], d["total"]["ok"], d["rollback"]' <<< "$out")" \
		"resume $A_pid True resumed running 1 None" "one JSON object: the action, each process's outcome and status, the total"
	start B "$TARGET"
	out=$("$CUDANAP" suspend --json "$A_pid" "$B_pid" 2>&1)
	is "$(json '[p["outcome"] for p in d["processes"]], d["total"]["processes"], d["total"]["failed"], d["total"]["rolled_back"]' <<< "$out")" \
		"['suspended', 'suspended'] 2 0 False" "suspend --json of two"
	like "$(json 'd["processes"][1]["line"]' <<< "$out")" "^$B_pid: suspended in " "with each process's line"
	"$CUDANAP" resume "$A_pid" "$B_pid" > /dev/null
	ask B "kernel 3000"
	write_ini "[lock]" "timeout_ms = 200"
	cli2 suspend --json --retries 0 "$A_pid" "$B_pid"
	is "$rc:$(json '[p["outcome"] for p in d["processes"]], d["rollback"]["processes"], d["total"]["rolled_back"]' <<< "$out")" \
		"1:['suspended', 'failed'] 1 True" "a rolled-back suspend in JSON: who failed, the rollback"
	ask B sync 10
	out=$("$CUDANAP" prepare --json "$A_pid" 2>&1)
	like "$(json 'd["action"], d["processes"][0]["outcome"]' <<< "$out")" "^prepare (prepared|failed)$" "prepare --json"
	ask B quit
else
	diag "no python3: the --json checks are not run"
fi

# -- status: a command on several lines, a long result
write_ini
"$CUDANAP" run -c "$T/job.ini" -- bash -c $'sleep 600\n: second line' &
sh_pid=$!
eventually 20 test -e "$T/status/$sh_pid.json"
kill -USR1 "$sh_pid"
settle "$sh_pid" 1
is "$(field "$sh_pid" result)" CUDA_ERROR_NOT_INITIALIZED "a shell signalled has no CUDA"
out=$("$CUDANAP" status -c "$T/job.ini")
is "$(grep -c "second line" <<< "$out")" 1 "status: a command's newlines do not break its row"
like "$(grep "^$sh_pid " <<< "$out")" "sleep 600 : second line$" "they are shown as spaces"
hdr=$(head -n 1 <<< "$out")
row=$(grep "^$sh_pid " <<< "$out")
is "$(awk -v h="$hdr" -v r="$row" 'BEGIN { p = index(h, "TIME"); print substr(r, p - 1, 1) == " " && substr(r, p, 1) != " " }')" 1 \
	"the RESULT column fits CUDA_ERROR_NOT_INITIALIZED, and TIME stays aligned"
# the shell's sleep too: it holds the test's output open for as long as it lives
kill "$sh_pid" $(pgrep -P "$sh_pid" -x sleep)
wait "$sh_pid" 2> /dev/null
ask A quit

# -- the demo without a GPU: the fake driver, said on every line, and the real command at the end
out=$(CUDANAP_DEMO_FAKE=1 bash "$(dirname "$0")/../../tools/demo.sh" 2>&1); rc=$?
is "$rc" 0 "the demo runs on the fake driver"
is "$(grep -vc '^demo (fake driver: no GPU here): ' <<< "$out")" 0 "every line says it is the fake driver"
like "$out" "suspended in .*every byte verified after the resume" "it suspends, resumes and verifies"
like "$(tail -n 1 <<< "$out")" "ninja -C build demo$" "and ends with the command that runs the real one"
finish
