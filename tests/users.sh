# Sourced after lib.sh by the tests that make users of this machine (the hostile suite's two, the
# JupyterHub test's two, who log in by PAM): as root, under one lock per host, so that a second
# run beside this one (another build, CI) waits, before its users are made, until the first has
# removed its own; always taken before the Slurm cluster's lock. A user is made only if missing,
# and removed at the end only if this test made it (the machine left as it was found: nothing of
# theirs left). The lock is held by a process of its own, which lives as long as this test's shell
# and no longer, not by a descriptor of the shell's: a daemon the test leaves behind would inherit
# that and hold the lock for ever (a JupyterHub left by another suite did, and every hostile run on
# the host waited for it).
[ "$(id -u)" = 0 ] || skip_all "needs root: it makes users and runs root's code"
for b in useradd userdel setpriv; do
	command -v "$b" > /dev/null || skip_all "no $b"
done
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
# test_user NAME [USERADD OPTIONS...]: NAME, made with those options when missing (default: no
# home, no shell to log in with).
test_user() {
	local u=$1
	shift
	id "$u" > /dev/null 2>&1 && return
	[ $# -gt 0 ] || set -- -M -d /nonexistent -s /usr/sbin/nologin
	useradd "$@" "$u" || skip_all "cannot make the user $u"
	users_made+=("$u")
}
# as_user NAME: the command line that runs a command as NAME, with a small environment of its own,
# in the same process (so that $! is the command's pid): "${AS_X[@]}" CMD ...
as_user() {
	printf '%s\0' setpriv --reuid="$(id -u "$1")" --regid="$(id -g "$1")" --clear-groups env -i \
		PATH=/usr/bin:/bin "${san[@]}"
}
# $lib: what the test's programs preload; under the sanitize setup the ASan runtime first, and
# the sanitizers' options kept through env -i.
lib=$(readlink -f "$LIBCUDANAP") san=()
if [ -n "${CN_SANITIZER_RUNTIME:-}" ]; then
	lib=$CN_SANITIZER_RUNTIME:$lib
	san=("ASAN_OPTIONS=${ASAN_OPTIONS:-}" "UBSAN_OPTIONS=${UBSAN_OPTIONS:-}")
fi
chmod 711 "$T"
mkdir -m 1777 "$T/pub"
