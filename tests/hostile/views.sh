#!/usr/bin/env bash
# What one user's process puts before root's eyes (a fourth round): its command line with bytes a
# strict UTF-8 decoder refuses (an overlong form, a surrogate, a code point above U+10FFFF), a
# status file naming one GPU twice, a number no unsigned field holds, a status directory named
# with an escape sequence: root's `cudanap metrics --textfile` passes promtool and a real
# node_exporter (its textfile collector: no scrape error, every user's series there), root's
# --json is UTF-8, no escape reaches root's terminal, the unbelievable file is not believed. What
# hides a process from root's status and metrics hides it no longer: its library replaced on disk
# (an upgrade), 70 KB of environment before cudanap's variables. A job_<J> cgroup of the user's
# own (a delegated subtree) gives no slurm_job label, and root's status on the host removes no
# status file of a process in a container (a pid namespace of its own). An environment of
# gigabytes (a range the process set) stalls neither root's status nor its --slurm.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/users.sh"
for b in promtool prometheus-node-exporter curl python3; do
	command -v "$b" > /dev/null ||
		skip_all "$b not found (Debian: prometheus prometheus-node-exporter curl python3)"
done

mkdir -m 755 "$T/tf"
utf8_json() { python3 -c 'import json, sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' 2> /dev/null; }
no_escape() { test -z "$(printf %s "$1" | tr -d -c '\033\007\233')"; }
# vrun NAME CMD...: CMD as the victim, preloaded (with vlib, else $lib), its status directory
# $T/pub/NAME (its own), the variables of vpre first in its environment, until its status file is
# there; NAME_pid
vrun() {
	local name=$1
	shift
	mkdir -m 700 "$T/pub/$name" && chown "$V" "$T/pub/$name"
	"${AS_V[@]}" ${vpre[@]+"${vpre[@]}"} LD_PRELOAD="${vlib:-$lib}" CUDANAP_STATUS_DIR="$T/pub/$name" "$@" &
	printf -v "${name}_pid" '%s' $!
	eventually 20 test -e "$T/pub/$name/$!.json"
}
# forge NAME JSON-FIELDS: NAME's status file rewritten by the victim: its pid and start time, an
# action under way (so that a root `cudanap status` of a run beside this one asks it nothing: its
# agent would answer by writing its own status over the forged one), then the fields given
forge() {
	local pid
	pid=$(eval echo "\$${1}_pid")
	"${AS_V[@]}" sh -c 'printf "{\"pid\":%d,\"starttime\":%s,\"state\":\"running\",\"busy\":true,%s}" "$1" "$2" "$4" > "$3/.x" && mv "$3/.x" "$3/$1.json"' \
		_ "$pid" "$(awk '{ print $22 }' "/proc/$pid/stat")" "$T/pub/$1" "$2"
}

# node_exporter's textfile collector alone on a loopback port, reading $T/tf
ne_port=$(free_port)
prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$T/tf" > "$T/ne.log" 2>&1 &
ne_pid=$!
scrape() { curl -s --max-time 5 "http://127.0.0.1:$ne_port/metrics"; }
eventually 30 scrape > /dev/null
# textfile_ok PID WHAT: root writes the textfile, every command line in its labels (--command-line:
# what a user's bytes can do there at worst); promtool takes it, and node_exporter reads it
# without an error, PID's series in it (PID "": none expected) once each
textfile_ok() {
	local out rc m
	"$CUDANAP" metrics --command-line --textfile "$T/tf"
	out=$(promtool check metrics < "$T/tf/cudanap.prom" 2>&1); rc=$?
	is "$rc:$out" "0:" "$2: root's textfile passes promtool"
	m=$(scrape)
	like "$m" $'\n''node_textfile_scrape_error 0'$'\n' "and node_exporter reads it without an error"
	# a scrape's own errors are counted in the next one's
	like "$(scrape)" $'\n''promhttp_metric_handler_errors_total\{cause="gathering"\} 0'$'\n' \
		"and serves it without one"
	[ -n "$1" ] || return 0
	like "$m" "cudanap_process_state\{[^}]*pid=\"$1\"" "with the process's series"
	# node_exporter writes the labels in their order by name
	is "$(grep -c "^cudanap_gpu_memory_bytes{.*pid=\"$1\"" <<< "$m")" "$(grep -c "^cudanap_gpu_memory_bytes{pid=\"$1\"" "$T/tf/cudanap.prom")" \
		"every sample of its GPU memory scraped: none dropped as a duplicate"
	[ "${rc}" = 0 ] || diag "promtool: $out"
}

# -- 1. a command line of bytes a strict decoder refuses (nothing forged: the agent copies
# /proc/self/cmdline): an overlong NUL, a surrogate, a code point above U+10FFFF
vrun U python3 -c 'import time; time.sleep(300)' $'a\xe0\x80\x80b\xed\xa0\x80c\xf4\x90\x80\x80d'
textfile_ok "$U_pid" "a command line that is not UTF-8"
check "root's status --json is valid UTF-8 JSON" utf8_json <<< "$("$CUDANAP" status --no-query --json 2>&1)"
table=$("$CUDANAP" status --no-query 2>&1)
check "and its table is UTF-8" python3 -c 'import sys; sys.stdin.buffer.read().decode("utf-8")' <<< "$table"
kill "$U_pid"

# -- 2. a status file naming GPU 0 twice in what it holds: one series, not two of one name and
# labels (node_exporter refused both)
vrun D /bin/sleep 300
forge D '"gpus":"0=GPU-face0000-0000-0000-0000-000000000000","gpu_now":"0:100,0:200,1:50,00:7"'
textfile_ok "$D_pid" "a GPU named twice"
is "$(grep -c "^cudanap_gpu_memory_bytes{pid=\"$D_pid\".*gpu=\"0\"" "$T/tf/cudanap.prom")" 1 "GPU 0 in one sample, its first entry's"
kill "$D_pid"

# -- 3. -1 in an unsigned field (strtoull wrapped it, and root's --json said 18446744073709551615):
# the file is not believed
vrun N /bin/sleep 300
forge N '"naps":-1,"seq":3'
json=$("$CUDANAP" status --no-query --json 2>&1)
check "-1 in an unsigned field: root's status --json is JSON" utf8_json <<< "$json"
check "and the file is not believed" test -z "$(grep -o "\"pid\":$N_pid," <<< "$json")"
textfile_ok "" "-1 in an unsigned field"
check "nor counted by root's metrics" test -z "$(grep "pid=\"$N_pid\"" "$T/tf/cudanap.prom")"
kill "$N_pid"

# -- 4. a status directory named with escape sequences in the victim's environment, one others may
# write in (so that root's line says it is not believed, and names it): root's lines about the
# process show none of its escapes
esc=$T/pub/esc/$'\e]0;owned\a\e[31m'
mkdir -m 755 "$T/pub/esc" && chown "$V" "$T/pub/esc"
"${AS_V[@]}" mkdir -m 777 "$esc"
"${AS_V[@]}" LD_PRELOAD="$lib" CUDANAP_STATUS_DIR="$esc" /bin/sleep 300 2> /dev/null &
e_pid=$!
eventually 20 grep -q libcudanap "/proc/$e_pid/maps"
out=$("$CUDANAP" suspend --timeout 3 "$e_pid" 2>&1)
like "$out" "^$e_pid: its status is not believed: $T/pub/esc/\?\]0;owned\?\?\[31m: mode 777" \
	"root's suspend of it: one line, naming the directory with '?' for its control characters"
check "that holds no escape character (${out//[$'\e\a']/^})" no_escape "$out"
out=$("$CUDANAP" suspend --dry-run --json "$e_pid" 2>&1)
check "its --json: UTF-8 JSON" utf8_json <<< "$out"
check "with no escape character" no_escape "$out"
kill "$e_pid"

# -- 5. its library replaced on disk (an upgrade: maps says "libcudanap.so (deleted)"), and 70 KB
# of its environment before CUDANAP_STATUS_DIR (environment modules): root sees the process all
# the same, in its status and its metrics
mkdir -m 755 "$T/lib"
cp "$LIBCUDANAP" "$T/lib/libcudanap.so"
vlib=$T/lib/libcudanap.so
[ -n "${CN_SANITIZER_RUNTIME:-}" ] && vlib=$CN_SANITIZER_RUNTIME:$vlib
vrun L /bin/sleep 300
unset vlib
cp "$LIBCUDANAP" "$T/lib/.new" && mv "$T/lib/.new" "$T/lib/libcudanap.so"
check "the library the victim's process runs is replaced on disk" grep -q "libcudanap.so (deleted)" "/proc/$L_pid/maps"
big=()
for i in 1 2 3 4 5 6 7; do big+=("MODULE_VAR_$i=$(head -c 10000 /dev/zero | tr '\0' x)"); done
vpre=("${big[@]}")
vrun E /bin/sleep 300
unset vpre
table=$("$CUDANAP" status --no-query 2>&1)
like "$table" $'\n'"$L_pid " "root's status shows the process whose library was replaced"
like "$table" $'\n'"$E_pid " "and the one with 70 KB of environment before its status directory"
like "$("$CUDANAP" status --no-query "$E_pid" 2>&1)" $'\n'"$E_pid " "and shows it when asked by its pid"
like "$("$CUDANAP" suspend --dry-run --tree "$L_pid" 2>&1)" "^$L_pid: (would|nothing)" "root's suspend --dry-run --tree finds it"
"$CUDANAP" metrics --textfile "$T/tf"
m=$(scrape)
like "$m" "cudanap_process_state\{[^}]*pid=\"$L_pid\"" "root's metrics count the first"
like "$m" "cudanap_process_state\{[^}]*pid=\"$E_pid\"" "and the second"
kill "$L_pid" "$E_pid"

# -- 6. a job_<J> cgroup the attacker made itself, in a subtree delegated to it (systemd's
# user@.service does that): its process gets no slurm_job label; only Slurm's, root's, are believed
cgdir=
cg_rm() { rmdir "$cgdir/job_4242" 2> /dev/null; }
cg_gone() { eventually 10 cg_rm; rmdir "$cgdir"; }
mkdir -m 700 "$T/pub/A" && chown "$A" "$T/pub/A"
"${AS_A[@]}" LD_PRELOAD="$lib" CUDANAP_STATUS_DIR="$T/pub/A" /bin/sleep 300 &
a_pid=$!
eventually 20 test -e "$T/pub/A/$a_pid.json"
for root in /sys/fs/cgroup/pids /sys/fs/cgroup/unified /sys/fs/cgroup; do
	[ -w "$root/cgroup.procs" ] || continue
	mkdir "$root/cudanap-hostile-$$" 2> /dev/null || continue
	cgdir=$root/cudanap-hostile-$$
	at_exit cg_gone
	chown "$A" "$cgdir" "$cgdir/cgroup.procs" # delegated to the attacker
	if "${AS_A[@]}" mkdir "$cgdir/job_4242" && echo "$a_pid" > "$cgdir/job_4242/cgroup.procs"; then
		break
	fi
	cg_gone
	cgdir=
done
if [ -n "$cgdir" ]; then
	check "the attacker's process is in a job_4242 cgroup of its own" grep -q "/cudanap-hostile-$$/job_4242$" "/proc/$a_pid/cgroup"
	"$CUDANAP" metrics --textfile "$T/tf"
	like "$(grep "^cudanap_process_state{pid=\"$a_pid\"" "$T/tf/cudanap.prom")" "slurm_job=\"\"" \
		"root's metrics give it no slurm_job label"
else
	skip "a job_4242 cgroup of the attacker's own" "no cgroup root may make and delegate here"
fi
kill "$a_pid"
wait "$a_pid" 2> /dev/null

# -- 7. a process of the victim's in a pid namespace of its own (a container's), its status
# directory one that root's status on the host reaches: its file names a pid of that namespace,
# which no process here has; root's status and metrics remove none of it (they took it for a
# stale file and removed it)
if command -v unshare > /dev/null && unshare --pid --fork --mount-proc true 2> /dev/null; then
	mkdir -m 700 "$T/pub/ns" && chown "$V" "$T/pub/ns"
	unshare --pid --fork --kill-child --mount-proc "${AS_V[@]}" LD_PRELOAD="$lib" \
		CUDANAP_STATUS_DIR="$T/pub/ns" /bin/sleep 300 &
	ns_pid=$!
	eventually 20 test -n "$(ls "$T/pub/ns")"
	f=$(ls "$T/pub/ns")
	"$CUDANAP" status --no-query > /dev/null 2>&1
	"$CUDANAP" metrics > /dev/null 2>&1
	check "a container's process: root's status and metrics on the host leave its file ($f) alone" \
		test -n "$f" -a -e "$T/pub/ns/$f"
	# unshare waits out SIGTERM, and the victim's uid cleared the child's parent-death signal:
	# the namespace's first process (the sleep) goes first, then unshare returns
	pkill -KILL -P "$ns_pid"
	wait "$ns_pid" 2> /dev/null
else
	skip "a process in a pid namespace of its own" "no unshare that makes one here"
fi

# -- 8. environments pointed at a mapping never touched (prctl PR_SET_MM_MAP, which needs no
# privilege; $BIGENV does it): root reads no more of one than a program is started with (8 MiB).
# One of 2 GiB stalled root's status 96 s, its memory grown by as much, and its --slurm without
# scontrol (which reads every user's processes'); one of 16 MiB naming a real status directory at
# its end is not taken for a process of cudanap's, and said so in one line when asked by its pid
forged_env() { # forged_env NAME MIB: the attacker's $BIGENV, preloaded, its status directory
	# $T/pub/NAME; NAME_pid, or "" when the kernel refuses the range
	local pid
	mkdir -m 700 "$T/pub/$1" && chown "$A" "$T/pub/$1"
	"${AS_A[@]}" LD_PRELOAD="$lib" CUDANAP_STATUS_DIR="$T/pub/$1" "$BIGENV" "$2" \
		CUDANAP_STATUS_DIR="$T/pub/$1" > "$T/$1.out" 2>&1 &
	pid=$!
	eventually 20 grep -q forged "$T/$1.out" || { kill "$pid" 2> /dev/null; pid=; }
	printf -v "${1}_pid" '%s' "$pid"
}
# the 16 MiB one first; the 2 GiB one only for as long as its checks take (a command of root's
# that reads it whole, another build's beside this one, would take minutes)
forged_env long 16
if [ -n "$long_pid" ]; then
	check "the attacker's process of 16 MiB of environment has its status file" test -e "$T/pub/long/$long_pid.json"
	out=$("$CUDANAP" status --no-query 2>&1)
	unlike "$out" $'\n'"$long_pid " "root's status does not take it for a process of cudanap's"
	out=$("$CUDANAP" status --no-query "$long_pid" 2>&1); rc=$?
	is "$rc:$out" "1:cudanap: $long_pid: not a running cudanap process: its environment is longer than 8 MiB, more than a program is started with: not taken for a process of cudanap's" \
		"asked by its pid, root says so in one line"
	out=$("$CUDANAP" suspend "$long_pid" 2>&1); rc=$?
	like "$rc:$out" "^1:$long_pid: its environment is longer than 8 MiB, .*; nothing sent" \
		"and its suspend sends nothing, in one line"
	"$CUDANAP" metrics --textfile "$T/tf"
	unlike "$(cat "$T/tf/cudanap.prom")" "pid=\"$long_pid\"" "root's metrics do not count it"
	kill "$long_pid"
	forged_env huge 2048
	out=$(timeout 30 "$CUDANAP" status --no-query 2>&1); rc=$?
	check "beside 2 GiB of environment, root's status answers (rc $rc)" test "$rc" = 0
	out=$(timeout 30 env PATH=/nonexistent "$CUDANAP" suspend --dry-run --slurm 424242 2>&1); rc=$?
	[ -n "$huge_pid" ] && kill "$huge_pid"
	check "and root's suspend --slurm without scontrol, which reads every user's processes' environments (rc $rc)" \
		test "$rc" = 1
else
	skip "environments of 16 MiB and 2 GiB" "the kernel refuses a new environment's range (no CONFIG_CHECKPOINT_RESTORE): $(cat "$T/long.out")"
fi

kill "$ne_pid"
finish
