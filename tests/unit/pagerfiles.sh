#!/usr/bin/env bash
# The node pager's files as shipped: the example policy passes check-config (a broken one is said in
# one line) and names the paths the code uses; the systemd units pass systemd-analyze verify (with
# ExecStart pointed at the built pager), the socket unit listens where programs ask by default, as
# a SOCK_SEQPACKET one.
. "$(dirname "$0")/../lib.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$("$CUDANAP" check-config "$src/config/pager.ini" 2>&1)
like "$out" "^$src/config/pager.ini: ok \(the node pager's policy: every other user's share 100 %, 0 user and 0 group sections, min_idle_s 60, when_full fail\)$" \
	"the example policy passes check-config, its defaults as the code has them"
sed -n 's/^#\[/[/p; s/^#\(share\|priority\) =/\1 =/p' "$src/config/pager.ini" | sed 's/alice/root/; s/students/root/' > "$T/uncommented.ini"
out=$("$CUDANAP" check-config "$T/uncommented.ini" 2>&1)
like "$out" "ok \(the node pager's policy: .*1 user and 1 group sections" "its commented sections, made real, pass too"
printf '[pager]\nmin_idle_s = 30\nshare = 150%%\n' > "$T/broken.ini"
out=$("$CUDANAP" check-config "$T/broken.ini" 2>&1)
is "$?:$out" "78:cudanap: $T/broken.ini:3: pager.share: '150' is not a number of percent from 0 to 100" \
	"check-config: a broken policy in one line, its file and line, exit 78"
like "$(grep '^ListenSequentialPacket=' "$src/pager/cudanap-pager.socket")" "=$(sed -n 's/^socket = //p' "$src/config/pager.ini")$" \
	"the socket unit listens at the policy's default socket, as a SOCK_SEQPACKET one"
if command -v systemd-analyze > /dev/null; then
	sed "s|^ExecStart=[^ ]*|ExecStart=$PAGER|" "$PAGER_SERVICE" > "$T/cudanap-pager.service"
	cp "$src/pager/cudanap-pager.socket" "$T/"
	out=$(systemd-analyze verify --man=no "$T/cudanap-pager.service" "$T/cudanap-pager.socket" 2>&1)
	is "$?:$out" "0:" "systemd-analyze verify: the units are well formed"
else
	skip "systemd-analyze verify" "no systemd-analyze"
fi
finish
