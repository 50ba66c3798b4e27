# Shared by the shell tests: TAP output, a scratch dir, a job INI, and driving a test program that
# answers one line per command over two fifos. Sourced, never run.
set -u

tap_n=0
tap_failed=0
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
diag() { printf '%s\n' "$*" | sed 's/^/# /'; } # every line a TAP comment
ok() { # ok STATUS DESCRIPTION
	tap_n=$((tap_n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; tap_failed=$((tap_failed + 1)); fi
}
check() { # check DESCRIPTION COMMAND...
	local d=$1; shift
	if "$@"; then ok 0 "$d"; else ok 1 "$d"; fi
}
is() { # is GOT WANT DESCRIPTION
	if [ "$1" = "$2" ]; then ok 0 "$3"; else ok 1 "$3"; diag "got '$1', want '$2'"; fi
}
like() { # like GOT REGEX DESCRIPTION
	if [[ $1 =~ $2 ]]; then ok 0 "$3"; else ok 1 "$3"; diag "got '$1', want /$2/"; fi
}
log_like() { # log_like FILE REGEX DESCRIPTION: like on FILE once it matches (10 s at most): a log
	# line may come after the status a check before it waited for
	local i
	for ((i = 0; i < 500; i++)); do
		[[ $(cat "$1" 2> /dev/null) =~ $2 ]] && break
		sleep 0.02
	done
	like "$(cat "$1" 2> /dev/null)" "$2" "$3"
}
unlike() { # unlike GOT REGEX DESCRIPTION
	if [[ $1 =~ $2 ]]; then ok 1 "$3"; diag "got '$1', which matches /$2/"; else ok 0 "$3"; fi
}
todo() { # todo REASON DESCRIPTION COMMAND...: a known failure (TAP TODO), or a race the driver
	# loses at times: a pass is reported as news, not as the suite's failure
	local why=$1 d=$2; shift 2
	tap_n=$((tap_n + 1))
	if "$@"; then
		echo "ok $tap_n - $d"
		diag "passed this time, though known to fail: $why"
	else
		echo "not ok $tap_n - $d # TODO $why"
	fi
}
skip() { # skip DESCRIPTION REASON: a check not run here (TAP SKIP)
	tap_n=$((tap_n + 1))
	echo "ok $tap_n - $1 # SKIP $2"
}
finish() { echo "1..$tap_n"; exit $((tap_failed > 0)); }
in_s() { awk -v m="$1" 'BEGIN { printf "%.2f", m / 1000 }'; } # in_s MS: seconds, two decimals

# Under the sanitize setup of an ASan build: the runtime first wherever the preload goes (start
# passes it to `cudanap run`, which appends the preload). LIBCUDANAP is the library alone.
LIBCUDANAP=${PRELOAD:-}
if [ -n "${CN_SANITIZER_RUNTIME:-}" ]; then
	PRELOAD=$CN_SANITIZER_RUNTIME:${PRELOAD:-}
fi

# cli ARGS...: run the command line with ARGS, its output in $out and its exit status in $rc (the
# caller's, when it declares them local); cli2 keeps its errors in $out too.
cli() { out=$("$CUDANAP" "$@"); rc=$?; }
cli2() { out=$("$CUDANAP" "$@" 2>&1); rc=$?; }

# python_with MODULE...: the first of python3 and /usr/bin/python3 that imports every MODULE (a
# command name or path), or "" when neither does.
python_with() {
	local p mods="$*"
	for p in python3 /usr/bin/python3; do
		if "$p" -c "import ${mods// /, }" 2> /dev/null; then
			command -v "$p"
			return
		fi
	done
}

# root_python [PROGRAM]: a Python of root's that root's `cudanap kernel` may run and that imports
# nothing but its standard library, its path in $rootpy ("" where there is none: not root, no /run
# of root's alone): the system's interpreter (or PROGRAM, a stand-in) copied to bin/pythonX.Y of a
# directory of its own under /run, beside a link to the system's standard library, its site
# directory lib/python3/dist-packages empty; removed at the end. Not under $T: Python looks for
# its library in every directory above it, and /tmp is anyone's to write in.
root_python() {
	local sys ver dir
	rootpy=
	sys=$(readlink -f /usr/bin/python3 2> /dev/null)
	ver=$("$sys" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2> /dev/null)
	[ -n "$ver" ] && [ -d "/usr/lib/python$ver" ] && [ "$(id -u)" = 0 ] &&
		[ -z "$(find /run -maxdepth 0 -perm /022 2> /dev/null)" ] &&
		dir=$(mktemp -d /run/cudanap-test-py.XXXXXX 2> /dev/null) || return 0
	[ ${#root_pythons[@]} -gt 0 ] || at_exit root_pythons_gone
	root_pythons+=("$dir")
	chmod 755 "$dir"
	mkdir -p "$dir/bin" "$dir/lib/python3/dist-packages"
	cp "${1:-$sys}" "$dir/bin/python$ver"
	ln -s "/usr/lib/python$ver" "$dir/lib/python$ver"
	rootpy=$dir/bin/python$ver
}
root_pythons=()
root_pythons_gone() { local d; for d in ${root_pythons[@]+"${root_pythons[@]}"}; do rm -rf "$d"; done; }

# real_python: the interpreter itself, not a version manager's shim in front of it. pyenv's is a
# bash script that forks a dozen times under the preload, and under the sanitize setup a fork
# while another thread (the preload's agent, starting) holds the ASan runtime's allocator lock
# leaves it held in the child forever: a hang seen once in 6 to 76 starts.
real_python() { python3 -c 'import sys; print(sys.executable)'; }

T=$(mktemp -d "${TMPDIR:-/tmp}/cudanap-test.XXXXXX")
mkdir -m 700 "$T/xdg" "$T/status"
export XDG_RUNTIME_DIR=$T/xdg XDG_STATE_HOME=$T/state # its own estimates (preload/rates.c)
# at_exit FUNCTION: run FUNCTION at the test's end, after its processes are gone (a cgroup it made,
# a user), whatever the end; a suite that traps EXIT itself calls cleanup.
exit_hooks=()
at_exit() { exit_hooks+=("$1"); }
cleanup() {
	local p f
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	for f in ${exit_hooks[@]+"${exit_hooks[@]}"}; do "$f"; done
	rm -rf "$T"
}
trap cleanup EXIT

# write_ini [EXTRA LINES...]: $T/job.ini with the status dir in $T and the given lines on top,
# then the test's INI_EXTRA lines (an array), when it has any.
write_ini() {
	{
		printf '%s\n' "$@" ${INI_EXTRA[@]+"${INI_EXTRA[@]}"}
		printf '[status]\ndir = %s\n' "$T/status"
	} > "$T/job.ini"
}

# start NAME CMD...: run CMD under `cudanap run -c $T/job.ini` (and the options in the array
# RUN_ARGS, when the test has one: --nap 4; as another user with the array RUN_AS, a command
# line that runs the rest as that user, in the same process: users.sh's as_user; with the INI
# JOB_INI instead of $T/job.ini), stdin/stdout on fifos; sets NAME_pid, NAME_in, NAME_out, and
# waits for its first line "ready PID ...", kept in NAME_ready.
start() {
	local name=$1 fin fout line; shift
	rm -f "$T/$name.in" "$T/$name.out"
	mkfifo "$T/$name.in" "$T/$name.out"
	${RUN_AS[@]+"${RUN_AS[@]}"} \
		env ${CN_SANITIZER_RUNTIME:+LD_PRELOAD=$CN_SANITIZER_RUNTIME${LD_PRELOAD:+:$LD_PRELOAD}} \
		"$CUDANAP" run ${RUN_ARGS[@]+"${RUN_ARGS[@]}"} -c "${JOB_INI:-$T/job.ini}" -- "$@" \
		< "$T/$name.in" > "$T/$name.out" 2>> "$T/$name.err" &
	printf -v "${name}_pid" '%s' $!
	exec {fin}> "$T/$name.in"
	exec {fout}< "$T/$name.out"
	printf -v "${name}_in" '%s' "$fin"
	printf -v "${name}_out" '%s' "$fout"
	read -r -t "${START_TIMEOUT:-120}" -u "$fout" line || line=
	printf -v "${name}_ready" '%s' "$line"
	[ "${line%% *}" = ready ]
}

# ask NAME COMMAND [TIMEOUT]: send one command, put the answer in $REPLY ("" on timeout).
ask() {
	local fin fout
	eval "fin=\$${1}_in fout=\$${1}_out"
	echo "$2" >&"$fin"
	REPLY=
	read -r -t "${3:-20}" -u "$fout" REPLY || REPLY=
}

# answer NAME [TIMEOUT]: the next line from NAME without sending anything.
answer() {
	local fout
	eval "fout=\$${1}_out"
	REPLY=
	read -r -t "${2:-20}" -u "$fout" REPLY || REPLY=
}

# field PID KEY: one value from PID's status file in $STATUS_DIR, else $T/status ("" if missing).
field() {
	local f="${STATUS_DIR:-$T/status}/$1.json" v
	[ -f "$f" ] || { echo ""; return; }
	v=$(grep -o "\"$2\":\(\"[^\"]*\"\|[^,}]*\)" "$f" | head -n1)
	v=${v#*:}
	v=${v#\"}
	echo "${v%\"}"
}

# fields PID KEYS: the values of KEYS ("state:wakes") from PID's status file, joined by ':'.
fields() {
	local k out= sep=
	local -a ks
	IFS=: read -ra ks <<< "$2"
	for k in "${ks[@]}"; do
		out+=$sep$(field "$1" "$k")
		sep=:
	done
	echo "$out"
}
fields_are() { [ "$(fields "$1" "$2")" = "$3" ]; }
# is_field PID KEYS WANT DESCRIPTION [SECONDS]: the check of a status file's values. The file is
# rewritten after what the test saw (a call answered once the gate opened, a cell's reply), so the
# check waits for WANT (10 s at most) before it compares: a value read too early is no failure.
is_field() {
	eventually "${5:-10}" fields_are "$1" "$2" "$3"
	is "$(fields "$1" "$2")" "$3" "$4"
}

# eventually SECONDS COMMAND...: run COMMAND every 20 ms until it succeeds, for SECONDS at most.
# Every wait for something to happen polls for it this way; a fixed sleep is left only where a test
# shows that something does NOT happen, and says so.
eventually() {
	local lim=$(($1 * 50)) i=0
	shift
	until "$@"; do
		i=$((i + 1))
		[ $i -lt $lim ] || return 1
		sleep 0.02
	done
}

# state_is PID STATE: PID's status says STATE with no action under way; nap_is PID NAP: its nap
# field says NAP.
state_is() { [ "$(field "$1" state):$(field "$1" busy)" = "$2:false" ]; }
nap_is() { [ "$(field "$1" nap)" = "$2" ]; }
# woke PID: until a wake is all in PID's status, running and its nap awake (or off), the wake
# counted (5 s at most): the gate opens for the waiting calls before the status file is written,
# so a call can answer first.
awake_is() { state_is "$1" running && [[ $(field "$1" nap) =~ ^(awake|off)$ ]]; }
woke() { eventually 5 awake_is "$1"; }
# stopped PID: PID is stopped (SIGSTOP); a signal is delivered after kill returns, so a test polls
# for it with eventually.
stopped() { [[ $(cat "/proc/$1/stat" 2> /dev/null) =~ \)\ T\  ]]; }
# gone PID...: every PID has exited, or is a zombie not reaped yet; wait for it with eventually.
gone() {
	local p
	for p in "$@"; do
		[ ! -e "/proc/$p" ] || grep -q '^[0-9]* (.*) Z' "/proc/$p/stat" 2> /dev/null || return 1
	done
}
# ctl_of PID: the pid of PID's controller, known by its argument (another suite's run has its own).
ctl_of() { pgrep -f "^cudanap-ctl $1\$"; }
# synced NAME: the target NAME's last synchronisation has returned ("drv synced" answers
# "synced RESULT MS", or "synced running" while it waits); wait for it with eventually.
synced() { ask "$1" "drv synced"; [ "${REPLY#synced }" != running ]; }
# held PID: the MiB the fake driver holds on the GPU for PID, its own allocations (0: none).
held() { cat "$T/fake/$1.alloc" 2> /dev/null || echo 0; }
# importable MODULE: the Python of the test ($py, else python3) imports MODULE.
importable() { "${py:-python3}" -c "import $1" > /dev/null 2>&1; }
# napped PID [SECONDS]: until a nap is all in PID's status, its state and its nap napping (20 s at
# most): the nap's outcome is written first, then its nap state and count.
nap_whole() { state_is "$1" napping && nap_is "$1" napping; }
napped() { eventually "${2:-20}" nap_whole "$1"; }
# light_napped PID: napping, and lightly (its context kept)
light_napped() { nap_whole "$1" && [ "$(field "$1" nap_depth)" = light ]; }

# memory_cgroup MIB: a memory cgroup of this test limited to MIB (v2, or v1's memory hierarchy), its
# path in $cg ("" where none can be made), removed at the test's end; a process joins it with
# `echo PID > $cg/cgroup.procs` (a command started in it: bash -c "echo \$\$ > $cg/cgroup.procs &&
# exec CMD").
memory_cgroup() {
	local v1 name=cudanap-test.$$.${#cgroups_made[@]}
	cg=
	v1=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
	if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers &&
		mkdir "/sys/fs/cgroup/$name" 2> /dev/null; then
		cg=/sys/fs/cgroup/$name
		{ echo +memory > /sys/fs/cgroup/cgroup.subtree_control; echo $(($1 << 20)) > "$cg/memory.max"; } 2> /dev/null
	elif [ -d "$v1" ] && [ "$v1" != /sys/fs/cgroup/memory ] && mkdir "$v1/$name" 2> /dev/null; then
		cg=$v1/$name
		echo $(($1 << 20)) > "$cg/memory.limit_in_bytes"
	fi
	cgroups_made+=("$cg")
}
cgroups_made=()
rm_cgroups() { local c; for c in ${cgroups_made[@]+"${cgroups_made[@]}"}; do [ -z "$c" ] || rmdir "$c" 2> /dev/null; done; }
at_exit rm_cgroups

# free_port: a TCP port nobody listens on, from a range away from Slurm's own 6817-6819 and the
# daemons' defaults (Prometheus 9090, node_exporter 9100).
free_port() {
	local p hex
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 30000))
		printf -v hex '%04X' "$p"
		grep -q ":$hex " /proc/net/tcp /proc/net/tcp6 2> /dev/null || { echo "$p"; return; }
	done
	echo 26817
}

# install_tree: `meson install` of the build into $T/inst, as a package lays it out; the test
# skips without a build to install (or under a sanitizer), and ends failed when the install fails.
install_tree() {
	[ -n "${BUILD_ROOT:-}" ] || skip_all "BUILD_ROOT not set"
	[ -z "${CN_SANITIZER_RUNTIME:-}" ] || skip_all "the install layout is not a sanitizer's business"
	meson install -C "$BUILD_ROOT" --no-rebuild --destdir "$T/inst" > "$T/install.log" 2>&1 ||
		{ ok 1 "meson install"; tail -n 5 "$T/install.log" >&2; finish; }
}

# has FILE REGEX: FILE exists and its text matches REGEX.
has() { [ -e "$1" ] && [[ $(cat "$1" 2> /dev/null) =~ $2 ]]; }

# settle PID SEQ [TIMEOUT_S]: wait until PID has finished its SEQth action.
settle() {
	local i=0 lim=$((${3:-20} * 50))
	while [ $i -lt $lim ]; do
		local s b
		s=$(field "$1" seq) b=$(field "$1" busy)
		[ -n "$s" ] && [ "$s" -ge "$2" ] && [ "$b" = false ] && return 0
		sleep 0.02
		i=$((i + 1))
	done
	return 1
}

# cycle NAME [SEQ]: suspend and resume NAME, started by start(), and its data must come back
# intact: through the command line, or, given SEQ (the action the suspend is, in its status file),
# through its signals.
cycle() {
	local pid out
	eval "pid=\$${1}_pid"
	if [ $# -ge 2 ]; then
		kill -USR1 "$pid"
		settle "$pid" "$2" || return 1
		[ "$(field "$pid" state)" = checkpointed ] || return 1
		kill -USR2 "$pid"
		settle "$pid" $(($2 + 1)) || return 1
		[ "$(field "$pid" state)" = running ] || return 1
	else
		out=$("$CUDANAP" suspend "$pid") || { diag "$out"; return 1; }
		"$CUDANAP" resume "$pid" > /dev/null || return 1
	fi
	ask "$1" verify
	[ "$REPLY" = "verify ok" ]
}

# quiet PID: until PID has no action under way and starts none for 0.3 s (20 s at most): after a
# burst of signals, whose bytes may reach its agent in more than one read.
quiet() {
	local i s
	for i in $(seq 60); do
		s=$(field "$1" seq)
		if [ "$(field "$1" busy)" = false ]; then
			sleep 0.3
			[ "$(field "$1" seq)" = "$s" ] && [ "$(field "$1" busy)" = false ] && return 0
		else
			sleep 0.05
		fi
	done
	return 1
}

# gpu_mib PID: MiB the process holds on the GPU, as nvidia-smi sees it (0 when it is not listed).
gpu_mib() {
	nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits |
		awk -F', *' -v p="$1" '$1 == p { s += $2 } END { print s + 0 }'
}

# mib_on PID GPU: MiB PID holds on GPU (nvidia-smi index).
mib_on() {
	local bus
	bus=$(nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader | awk -F', *' -v i="$2" '$1 == i { print $2 }')
	nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv,noheader,nounits |
		awk -F', *' -v p="$1" -v b="$bus" '$1 == p && $2 == b { s += $3 } END { print s + 0 }'
}
