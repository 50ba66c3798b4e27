# Shared by the tests whose targets run a loop of the fake NCCL's operations ("nccl loop"): how far
# a target's loop has come. Sourced after lib.sh.
steps() { ask "$1" "nccl steps"; echo "${REPLY#nccl }"; } # "STEPS ERRORS"
advancing() { # advancing NAME: its loop's steps go up
	local a b
	a=$(steps "$1"); a=${a%% *}
	for _ in $(seq 200); do
		b=$(steps "$1"); b=${b%% *}
		[ "$b" -gt "$a" ] && return 0
		sleep 0.02
	done
	return 1
}
