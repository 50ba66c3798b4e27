#!/usr/bin/env bash
# The hostile suite leaves the machine as it found it: the users users.sh makes (cnvictim and
# cnattacker, when missing) are removed when the test that made them ends, their groups and
# subordinate ids with them, and users that were there before are left alone.
. "$(dirname "$0")/../lib.sh"
[ "$(id -u)" = 0 ] || skip_all "needs root: users.sh makes two users"
here=$(cd "$(dirname "$0")" && pwd)
# A test that sources users.sh and ends at once, saying which users it made.
out=$(bash -c '. "$1/../lib.sh"; . "$1/users.sh"; echo "made:${users_made[*]}"; id -u cnvictim cnattacker | xargs' _ "$here" 2>&1)
made=$(sed -n 's/^made://p' <<< "$out")
like "$out" "made:.*
[0-9]+ [0-9]+$" "users.sh gives the test its two users"
diag "made by it: ${made:-none (they were there)}"
# Looked at under users.sh's lock: a hostile test of another run beside this one (another build,
# CI) may have made the users since; it removes them before it lets the lock go.
exec {users_lock}> "${TMPDIR:-/tmp}/cudanap-test-users.lock"
flock -w 500 "$users_lock" || diag "the test users' lock not free after 500 s"
for u in $made; do
	check "$u, made for the test, is removed at its end" test -z "$(getent passwd "$u")"
	check "and its group" test -z "$(getent group "$u")"
	check "and its subordinate ids" bash -c "! grep -qs '^$u:' /etc/subuid /etc/subgid"
done
for u in cnvictim cnattacker; do
	[[ " $made " == *" $u "* ]] && continue
	check "$u, there before the test, is still there" test -n "$(getent passwd "$u")"
done
finish
