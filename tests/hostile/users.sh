# Sourced by the hostile suite after lib.sh: two users of this machine (tests/users.sh makes
# them), a victim (uid V) and an attacker (uid A); "${AS_V[@]}" CMD and "${AS_A[@]}" CMD run CMD
# as one of them, with a small environment of its own, in the same process (so that $! is CMD's
# pid); $T/pub a directory both reach. They are real users, in /etc/passwd, because Slurm's
# daemons (hostile-slurm.sh) run jobs as them.
. "$(dirname "${BASH_SOURCE[0]}")/../users.sh"
test_user cnvictim
test_user cnattacker
V=$(id -u cnvictim) A=$(id -u cnattacker)
mapfile -d '' -t AS_V < <(as_user cnvictim)
mapfile -d '' -t AS_A < <(as_user cnattacker)
