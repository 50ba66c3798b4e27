# Sourced by the hostile suite after lib.sh: two users of this machine, made here if missing (as
# root, which the suite needs), a victim (uid V) and an attacker (uid A), and removed at the end if
# this test made them (the machine left as it was found: no home, no mail spool, nothing of theirs
# left); "${AS_V[@]}" CMD and "${AS_A[@]}" CMD run CMD as one of them, with a small environment of
# its own, in the same process (so that $! is CMD's pid); $T/pub a directory both reach. They are
# real users, in /etc/passwd, because Slurm's daemons (hostile-slurm.sh) run jobs as them.
[ "$(id -u)" = 0 ] || skip_all "needs root: it makes two users and runs root's code"
for b in useradd userdel setpriv; do
	command -v "$b" > /dev/null || skip_all "no $b"
done
# One hostile test per host at a time: the users, and the victim's default status directory
# (/tmp/cudanap-UID) that hostile.sh squats, are the host's. A second run beside this one (another
# build, CI) waits here, before the users are made, and the lock is held until they are removed
# (the test's end); always taken before the Slurm cluster's lock. It is held by a process of its
# own, which lives as long as this test's shell and no longer, not by a descriptor of the shell's:
# a daemon the test leaves behind would inherit that and hold the lock for ever (a JupyterHub left
# by another suite did, and every hostile run on the host waited for it).
mkfifo "$T/users-lock"
flock -w 500 "${TMPDIR:-/tmp}/cudanap-test-users.lock" \
	sh -c 'echo locked; exec 1> /dev/null; while kill -0 "$1" 2> /dev/null; do sleep 0.2; done' _ $$ \
	> "$T/users-lock" 2> /dev/null < /dev/null &
disown $! # not one of the test's processes that cleanup kills first: it ends after the users
read -r -t 510 locked < "$T/users-lock" || locked=
[ "$locked" = locked ] || { ok 1 "the test users not free after 500 s"; finish; }
users_made=()
# After the test's processes are gone (lib.sh's cleanup); a Slurm job's may take a moment more.
user_gone() { userdel "$1" 2> /dev/null; }
users_remove() {
	local u
	for u in ${users_made[@]+"${users_made[@]}"}; do
		eventually 20 user_gone "$u" || echo "# the test user $u could not be removed: userdel $u"
	done
}
at_exit users_remove
for u in cnvictim cnattacker; do
	if ! id "$u" > /dev/null 2>&1; then
		useradd -M -d /nonexistent -s /usr/sbin/nologin "$u" || skip_all "cannot make the user $u"
		users_made+=("$u")
	fi
done
V=$(id -u cnvictim) A=$(id -u cnattacker)
# $lib: what the victim preloads; under the sanitize setup the ASan runtime first, and the
# sanitizers' options kept through env -i.
lib=$(readlink -f "$LIBCUDANAP") san=()
if [ -n "${CN_SANITIZER_RUNTIME:-}" ]; then
	lib=$CN_SANITIZER_RUNTIME:$lib
	san=("ASAN_OPTIONS=${ASAN_OPTIONS:-}" "UBSAN_OPTIONS=${UBSAN_OPTIONS:-}")
fi
AS_V=(setpriv --reuid="$V" --regid="$(id -g cnvictim)" --clear-groups env -i PATH=/usr/bin:/bin "${san[@]}")
AS_A=(setpriv --reuid="$A" --regid="$(id -g cnattacker)" --clear-groups env -i PATH=/usr/bin:/bin "${san[@]}")
chmod 711 "$T"
mkdir -m 1777 "$T/pub"
