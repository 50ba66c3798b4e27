#!/usr/bin/env bash
# The command line's first hour, with the fake driver: INI files that are not files, check-config
# as strict as a start and saying every error, usage errors in one line, help, a PID given twice,
# the status table with long results and multi-line commands, and --json for suspend, resume,
# prepare and metrics.
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
is "$rc:$out" "78:cudanap: $T/nosect.ini:1: timeout_ms: a key before any [section]; did you mean [lock] timeout_ms or [hooks] timeout_ms?" \
	"a key before any section says so, and where it belongs"
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

# -- an INI of several mistakes: each at its own line, with its own message and the name meant,
# from check-config, cudanap run (which starts nothing) and the preload itself
printf '[nap]\nidel_s = 10\n[lock]\ntimeout_ms = soon\n[nape]\nto = disk\n[signals]\nsuspend\n' > "$T/t3.ini"
want="cudanap: $T/t3.ini:2: nap.idel_s: unknown key; did you mean idle_s?
cudanap: $T/t3.ini:4: lock.timeout_ms: 'soon' is not a number of milliseconds from 0 to 86400000
cudanap: $T/t3.ini:5: [nape]: unknown section; did you mean [nap]?
cudanap: $T/t3.ini:8: syntax error: 'suspend' is not key = value, a [section] or a ; comment"
cli2 check-config "$T/t3.ini"
is "$rc:$out" "78:$want" "check-config: every error, each at its line with its message"
cli2 run -c "$T/t3.ini" -- touch "$T/ran"
is "$rc:$out" "78:$want" "cudanap run -c refuses it the same way"
check "and runs nothing" test ! -e "$T/ran"
out=$(CUDANAP_CONFIG=$T/t3.ini "$CUDANAP" run -- touch "$T/ran" 2>&1); rc=$?
is "$rc:$out" "78:$want" "so does cudanap run with CUDANAP_CONFIG"
out=$(CUDANAP_CONFIG=$T/t3.ini LD_PRELOAD=$PRELOAD "$TARGET" 2>&1 < /dev/null); rc=$?
like "$rc:$out" "^78:.*$T/t3.ini:2: nap.idel_s: unknown key; did you mean idle_s\? \(and 3 more errors: cudanap check-config lists them\)" \
	"a program started with the preload stops at the first, in one line, saying how many more"
if command -v python3 > /dev/null; then
	jsonv() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }
	cli check-config --json "$T/t3.ini"
	is "$rc:$(jsonv 'd["file"].endswith("/t3.ini"), d["ok"], [(e["line"], e["section"], e["key"], e["hint"]) for e in d["errors"]], d["more"]' <<< "$out")" \
		"78:True False [(2, 'nap', 'idel_s', 'idle_s'), (4, 'lock', 'timeout_ms', ''), (5, 'nape', '', '[nap]'), (8, '', '', '')] 0" \
		"check-config --json: each error's line, section, key and the name meant"
	is "$(jsonv 'd["errors"][0]["message"]' <<< "$out")" "nap.idel_s: unknown key; did you mean idle_s?" "and its message"
	cli check-config --json "$T/job.ini"
	is "$rc:$(jsonv 'd["ok"], d["errors"], d["more"]' <<< "$out")" "0:True [] 0" "check-config --json of a good file"
	cli check-config --json "$T"
	is "$rc:$(jsonv '[(e["line"], e["message"]) for e in d["errors"]]' <<< "$out")" "78:[(None, 'a directory, not an INI file')]" \
		"of a directory: an error of the file as a whole, line null"
	cli check-config --json "$T/nodir.ini"
	is "$rc:$(jsonv '[(e["line"], e["section"], e["key"]) for e in d["errors"]]' <<< "$out")" "78:[(None, 'status', 'dir')]" \
		"of a status dir a start cannot make"
else
	diag "no python3: check-config --json is not checked"
fi
# the node pager's policy: every error too, with the key meant
printf '[pager]\nshar = 50\nwhen_full = maybe\n[user root]\nshare = 200\n' > "$T/policy.ini"
cli2 check-config "$T/policy.ini"
is "$rc:$out" "78:cudanap: $T/policy.ini:2: pager.shar: unknown key; did you mean share?
cudanap: $T/policy.ini:3: pager.when_full: 'maybe' is not fail or wait
cudanap: $T/policy.ini:5: user root.share: '200' is not a number of percent from 0 to 100" \
	"check-config of a policy: every error, each at its line, the key meant"
if command -v python3 > /dev/null; then
	cli check-config --json "$T/policy.ini"
	is "$rc:$(jsonv 'd["kind"], [(e["line"], e["key"], e["hint"]) for e in d["errors"]]' <<< "$out")" \
		"78:policy [(2, 'shar', 'share'), (3, 'when_full', ''), (5, 'share', '')]" "and as JSON, kind policy"
fi
cli2 check-config
is "$rc:$out" "2:cudanap check-config: give one INI file; see 'cudanap check-config --help'" "check-config of nothing"

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
# they are made), each named by status's help, the man page and docs/USAGE.md, the napping one too
src=$(dirname "$0")/../..
words=$(sed -n '/CN_NAMES_DEFINE(cn_outcome_state,/,/)$/p' "$src/base/outcome.c" | grep -o '"[a-z-]*"' | tr -d '"' | xargs)
is "$words" "running locked checkpointed failed no-cuda napping" "the states' words, napping its own"
help=$("$CUDANAP" status --help | tr '\n' ' ')
man=$(tr '\n' ' ' < "$src/docs/cudanap.1.scd")
usage=$(tr '\n' ' ' < "$src/docs/USAGE.md")
for w in $words; do
	check "status --help names the state $w" grep -qw -- "$w" <<< "$help"
	check "so do the man page's status and status file" test "$(grep -o "\*$w\*" <<< "$man" | wc -l)" -ge 2
	check "and USAGE.md's status file" grep -q "\`$w\`" <<< "$usage"
done
out=$("$CUDANAP" help | grep -E '^  (run|suspend|resume|prepare|status|check-config|help|--version) ' |
	awk '{ print substr($0, 37, 1) == " " && substr($0, 38, 1) != " " }' | sort -u)
is "$out" 1 "the main help's descriptions start in one column"
cli2 help nothing
is "$rc:$out" "2:cudanap: unknown command 'nothing'; see 'cudanap help'" "help for a command that does not exist"
cli2 staus
is "$rc:$out" "2:cudanap: unknown command 'staus'; did you mean 'status'? See 'cudanap help'" \
	"a misspelt command: the one meant"
cli2 help suspnd
like "$rc:$out" "^2:cudanap: unknown command 'suspnd'; did you mean 'suspend'\?" "and for help"

# -- a PID given twice is acted on once
start A "$TARGET"
# USAGE.md's status-file example has every key a status file has, and no other
keys() { grep -o '"[a-z_]*":' | sort -u | tr -d '":\n'; }
usage_md=$(dirname "$0")/../../docs/USAGE.md
is "$(sed -n '/^```json$/,/^```$/p' "$usage_md" | keys)" "$(keys < "$T/status/$A_pid.json")" \
	"USAGE.md's status file example has the keys of a status file"
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
	# metrics --json: the text's samples, each with its labels and value, in families (both read
	# while the processes are awake and idle: nothing changes between the two)
	"$CUDANAP" metrics -c "$T/job.ini" > "$T/m.txt"
	"$CUDANAP" metrics -c "$T/job.ini" --json > "$T/m.json"
	is "$(python3 - "$T/m.txt" "$T/m.json" << 'PY'
import json, re, sys
def unescape(v):
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), v)
text = []
for line in open(sys.argv[1]).read().splitlines():
    if not line or line.startswith("#"):
        continue
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
    labels = {k: unescape(v) for k, v in re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")}
    text.append((m.group(1), sorted(labels.items()), float(m.group(3))))
d = json.load(open(sys.argv[2]))
js = [(s["name"], sorted(s["labels"].items()), s["value"]) for f in d["metrics"] for s in f["samples"]]
types = {f["name"]: f["type"] for f in d["metrics"]}
declared = [l.split()[2] for l in open(sys.argv[1]) if l.startswith("# TYPE ")]
print(len(text) > 0, text == js, types.get("cudanap_process_state"), types.get("cudanap_wake_seconds"),
      all(f["help"] for f in d["metrics"]), [f["name"] for f in d["metrics"]] == declared)
PY
)" "True True gauge histogram True True" "metrics --json: every sample of the text, its labels and value, in the families the text declares, typed, with their help"
	cli2 metrics --json --textfile "$T"
	is "$rc:$out" "2:cudanap metrics: --json prints, --textfile writes the file and --listen serves it: give one of them" "metrics --json --textfile: one of them"
	cli2 metrics --json --listen 127.0.0.1:0
	is "$rc:$out" "2:cudanap metrics: --json prints, --textfile writes the file and --listen serves it: give one of them" "metrics --json --listen: one of them"
	like "$("$CUDANAP" metrics --help)" "--json" "metrics --help names --json"
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
