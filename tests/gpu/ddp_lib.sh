# Shared by the ddp tests: the job's INI, its steps and losses, its ranks and their GPUs.
# Sourced after lib.sh, with $py set.
nccl_ini() { write_ini "[nccl]" "suspendable = true" "[lock]" "timeout_ms = ${LOCK_MS:-5000}" "$@"; }
losses() { grep '^step' "$1"; }
nsteps() { grep -c '^step' "$1" 2> /dev/null; }
wait_step() { # wait_step FILE N: until step N is printed (2 minutes at most)
	for _ in $(seq 1200); do grep -q "^step $2 " "$1" 2> /dev/null && return 0; sleep 0.1; done
	return 1
}
wait_done() { # wait_done FILE PID: until the job prints done or exits
	for _ in $(seq 3000); do
		grep -q '^done' "$1" && { wait "$2"; return 0; }
		kill -0 "$2" 2> /dev/null || return 1
		sleep 0.1
	done
	return 1
}
ranks_of() { awk '/^rank/ { print $4 }' "$1" | tr '\n' ' '; }
gpus_of() { # gpus_of PID...: the GPUs each holds memory on (01 for both 0 and 1, - for none)
	local p g on out= n
	n=$(nvidia-smi -L | wc -l)
	for p in "$@"; do
		on=
		for ((g = 0; g < n; g++)); do [ "$(mib_on "$p" "$g")" -gt 0 ] && on=$on$g; done
		out="$out${on:--} "
	done
	echo "${out% }"
}
states_of() { local p out=; for p in "$@"; do out="$out$(field "$p" state) "; done; echo "${out% }"; }
secs() { sed -n 's/^total: .*, \([0-9.]*\) s$/\1/p' <<< "$1"; }
kill_tree() { pkill -9 -P "$1" 2> /dev/null; kill -9 "$1" 2> /dev/null; wait "$1" 2> /dev/null; }
