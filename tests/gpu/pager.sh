#!/usr/bin/env bash
# Two real users on one GPU through root's node pager: notebook-like sessions of mixed frameworks
# (tests/gpu/nap_session.py, fed through pipes: PyTorch, CuPy, PyTorch that allocates at its first
# cell, JAX with its pool preallocated at that size) of GIB GiB each where two fit and three do
# not, ROUNDS (10) rounds of one cell per session in turn, each cell waking its session by napping
# another. On a GPU larger than an H100's 80 GB, a ballast of root's (PyTorch, not under cudanap:
# never napped) holds the rest, so that sessions of GIB (27) GiB meet an H100's memory and the
# host holds the napped ones' copies; on a smaller GPU a session is 34 % of it. First the four
# sessions as one user with the same-user make_room ([nap] make_room = user), then the same four,
# two of each of two users made here (useradd), through the node pager run by root (make_room =
# node): every cell right (each equal to its session's first), no out-of-memory error, every
# session napped for the other user's at least once, and each cell's time printed beside the same
# cell of the same-user run (the goal: no slower; printed, not asserted). Needs root, a GPU and a
# Python with PyTorch (PYTHON; CuPy and JAX where it has them, PyTorch in their place where not);
# where the test users cannot reach it or the build (under /root, say), the directories on the
# way are made searchable by others for the test's time, and put back at its end.
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ "$(id -u)" = 0 ] || skip_all "needs root: it makes two users and runs the node pager"
# as found on PATH, not resolved: a venv's python3 is a link to the system's, which sees none of
# the venv's packages
py=$(command -v "${PYTHON:-python3}")
"$py" -c 'import torch' 2> /dev/null || skip_all "$py cannot import torch (PYTHON names another)"
. "$(dirname "$0")/../users.sh"
ROUNDS=${ROUNDS:-10}
# reach PATH: every directory above PATH searchable by others (x), until the test's end
reached=()
reach() {
	local d
	d=$(readlink -f "$1") || return 0
	[ -d "$d" ] || d=$(dirname "$d")
	while [ "$d" != / ]; do
		if [ -d "$d" ] && [ $((0$(stat -c %a "$d") & 1)) = 0 ]; then
			reached+=("$(stat -c %a "$d"):$d")
			chmod o+x "$d"
		fi
		d=$(dirname "$d")
	done
}
unreach() { local r; for r in ${reached[@]+"${reached[@]}"}; do chmod "${r%%:*}" "${r#*:}"; done; }
at_exit unreach
for f in "$CUDANAP" "$LIBCUDANAP" "$PAGER" "$(dirname "$0")" \
	$("$py" -c 'import sys, torch; print(sys.prefix, sys.base_prefix, torch.__file__)'); do
	reach "$f"
done
[ ${#reached[@]} = 0 ] || diag "made searchable for the test users until the end: ${reached[*]#*:}"
for u in cnpgra cnpgrb; do
	test_user "$u" -m -d "$T/pub/home-$u" -s /usr/sbin/nologin
	mkdir -p "$T/pub/home-$u" && chown "$u:" "$T/pub/home-$u" && chmod 700 "$T/pub/home-$u"
	mkdir -m 700 "$T/pub/st-$u" && chown "$u" "$T/pub/st-$u"
done
mapfile -d '' -t AS_1 < <(as_user cnpgra)
mapfile -d '' -t AS_2 < <(as_user cnpgrb)
# What the sessions need of the environment, through env -i: their homes (the frameworks' caches)
# and the GPU's libraries where the Python's own do not say
env_of() { echo "HOME=$T/pub/home-$1" ${LD_LIBRARY_PATH:+"LD_LIBRARY_PATH=$LD_LIBRARY_PATH"}; }
"${AS_2[@]}" test -x "$CUDANAP" -a -r "$LIBCUDANAP" ||
	skip_all "the test users cannot run $CUDANAP or read $LIBCUDANAP: build in a directory every user may read"
"${AS_2[@]}" $(env_of cnpgrb) "$py" -c 'import torch; assert torch.cuda.is_available()' 2> "$T/probe.err" ||
	skip_all "the test users cannot run $py with PyTorch on the GPU ($(tail -n 1 "$T/probe.err")): set PYTHON to a Python every user may run"
imports() { "${AS_2[@]}" $(env_of cnpgrb) "$py" -c "import $1" 2> /dev/null; }
# a user's two sessions napped by the other's: S0 and S1 of the first user, S2 and S3 of the
# second; each wake naps the session idle longest, the one two before it in turn: the other user's
kinds=(torch cupy later jax)
imports cupy || kinds[1]=torch
imports jax || kinds[3]=later
total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n 1)
h100=81559 # MiB, an H100 80GB's
if [ "$total" -gt $((h100 + 4096)) ]; then
	GIB=${GIB:-27}
	# what the sessions may have: three sessions and their contexts (about 600 MiB each) less 2 GiB
	room=$((3 * (GIB * 1024 + 600) - 2048))
	ballast=$((total - room - 600))
	"$py" -c 'import sys, time, torch
x = torch.empty(int(sys.argv[1]) << 20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("held", flush=True)
while True:
    time.sleep(60)' "$ballast" < /dev/null > "$T/ballast.out" 2> "$T/ballast.err" &
	check "root's ballast holds $ballast MiB (not under cudanap)" eventually 120 grep -q held "$T/ballast.out"
else
	GIB=${GIB:-$((total * 34 / 100 / 1024))}
fi
host_gib=$(awk '/^MemTotal:/ { print int($2 / 1048576) }' /proc/meminfo)
[ "$host_gib" -ge $((3 * GIB)) ] ||
	diag "the host's $host_gib GiB may not hold two napped sessions' copies of $GIB GiB beside the rest"
frac=$(awk -v g="$GIB" -v t="$total" 'BEGIN { printf "%.3f", g * 1024 / t }')
session=$T/pub/nap_session.py # where the test users may read it
cp "$(dirname "$0")/nap_session.py" "$session"
chmod 644 "$session"
diag "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1); $total MiB, $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -n 1) MiB free; host $host_gib GiB; sessions of $GIB GiB: ${kinds[*]}"

# the node pager, root's, every share whole, as idle as the same-user run asks
mkdir -m 755 "$T/run"
printf '[pager]\nsocket = %s\nstate = %s\nmin_idle_s = 1\n' "$T/run/pager.sock" "$T/run/pager.state" > "$T/pager.ini"
"$PAGER" -c "$T/pager.ini" 2> "$T/pager.log" &
pager_pid=$!
check "the node pager listens" eventually 20 test -S "$T/run/pager.sock"
ini_of() { # ini_of USER MODE: that user's INI for make_room = MODE
	local f=$T/pub/$1-$2.ini
	printf '[nap]\nmake_room = %s\nmin_idle_s = 1\npager_socket = %s\n[status]\ndir = %s\n[log]\nlevel = info\n' \
		"$2" "$T/run/pager.sock" "$T/pub/st-$1" > "$f"
	chmod 644 "$f"
	echo "$f"
}

# phase LABEL MODE USER...: the four sessions, the Nth as the Nth USER, ROUNDS rounds; each cell's
# seconds in ms_LABEL[round.session], its result checked against its session's first
declare -A ms_user ms_node
bad=0 cells=0
phase() {
	local label=$1 mode=$2 n s u kind r t0 pid
	shift 2
	local -a users=("$@") names=()
	local -A first=()
	local -n ms=ms_$label
	for n in 0 1 2 3; do
		s=S$n u=${users[$n]} kind=${kinds[$n]}
		names+=("$s")
		mapfile -d '' -t RUN_AS < <(as_user "$u")
		RUN_AS+=($(env_of "$u"))
		[ "$kind" != jax ] || RUN_AS+=("XLA_PYTHON_CLIENT_MEM_FRACTION=$frac")
		JOB_INI=$(ini_of "$u" "$mode")
		START_TIMEOUT=600 start "$s" "$py" "$session" "$kind" $([ "$kind" = jax ] && echo $((GIB / 2)) || echo "$GIB") ||
			diag "$s ($kind, $u) did not start: $(tail -n 3 "$T/$s.err")"
		unset RUN_AS JOB_INI
	done
	for r in $(seq "$ROUNDS"); do
		for n in 0 1 2 3; do
			s=${names[$n]}
			t0=$(date +%s%N)
			ask "$s" compute 600
			ms[$r.$n]=$((($(date +%s%N) - t0) / 1000000))
			cells=$((cells + 1))
			[ -n "${first[$s]:-}" ] || first[$s]=$REPLY
			if [ -z "$REPLY" ] || [ "$REPLY" != "${first[$s]}" ]; then
				bad=$((bad + 1))
				diag "$label round $r $s (${kinds[$n]}): got '$REPLY', its first cell '${first[$s]}'"
			fi
		done
	done
	oom=$(cat "${names[@]/#/$T/}" 2> /dev/null | grep -c -e OutOfMemoryError -e 'CUDA out of memory' -e RESOURCE_EXHAUSTED -e 'no room could be made')
	for s in "${names[@]}"; do cp "$T/$s.err" "$T/$label-$s.log"; done
	for s in "${names[@]}"; do eval "exec {${s}_in}>&-"; done
	for s in "${names[@]}"; do eval "timeout 60 tail --pid=\$${s}_pid -f /dev/null"; done
	rm -f "$T"/S?.err
}

phase user user cnpgra cnpgra cnpgra cnpgra
is "$bad:$oom" "0:0" "one user, same-user make_room: all $((ROUNDS * 4)) cells right, no out-of-memory error"
bad=0
phase node node cnpgra cnpgra cnpgrb cnpgrb
is "$bad:$oom" "0:0" "two users through root's node pager: all $((ROUNDS * 4)) cells right, no out-of-memory error"
crossed=0
for n in 0 1 2 3; do
	o=$([ "$n" -lt 2 ] && echo cnpgrb || echo cnpgra)
	grep -q "napped .*(for [0-9]* of $o, by the node pager" "$T/node-S$n.log" && crossed=$((crossed + 1))
done
is "$crossed" 4 "every session napped at least once for the other user's"
like "$(cat "$T/pager.log")" "for [0-9]+ \(cnpgr., its wake, [0-9]+ MiB on GPU 0\): napped [0-9]+ \(cnpgr." \
	"the pager's log has its choices"

# each cell's time beside the same cell of the same-user run
printf '# %5s %7s %6s %12s %12s %7s\n' round session kind user_s node_s ratio
u_all= n_all=
for r in $(seq "$ROUNDS"); do
	for n in 0 1 2 3; do
		a=${ms_user[$r.$n]:-0} b=${ms_node[$r.$n]:-0}
		u_all+=" $a" n_all+=" $b"
		printf '# %5d %7s %6s %12.2f %12.2f %7s\n' "$r" "S$n" "${kinds[$n]}" "${a}e-3" "${b}e-3" \
			"$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "-" }')"
	done
done
med() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) / 1000 }'; }
mu=$(med <<< "$u_all") mn=$(med <<< "$n_all")
diag "median cell: same-user make_room $mu s, node pager $mn s ($(awk -v a="$mu" -v b="$mn" 'BEGIN { if (a > 0) printf "%.2fx", b / a }'))"
diag "the pager: $(grep -c 'napped' "$T/pager.log") choices that napped, $(grep -c 'no room made' "$T/pager.log") refusals"
kill "$pager_pid"
finish
