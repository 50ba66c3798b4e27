#!/usr/bin/env bash
# JupyterHub end to end, on the fake driver's one GPU (600 MiB) shared by two users: Debian's
# jupyterhub with its proxy, two real users made here who log in through the Hub's login page
# (PAM), LocalProcessSpawner starting each one's notebook server as that user, cudanap's kernel
# installed for all of them (a prefix the Hub names in JUPYTER_PATH), and the node pager run by
# root. A's kernel holds most of the GPU and goes idle; B's cell needs that memory: the pager
# naps A's kernel (B's status and A's say for whom) and B's cell runs; A's next cell wakes A,
# which asks the pager in turn, and B's kernel, idle now, is napped for it; A finds its data.
# Everything as a browser's page does it: the Hub's REST API, the notebook server's, and the
# kernel's websocket (tests/jupyterhub/hub_client.py).
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
HUBPY=/usr/bin/python3
for b in /usr/bin/jupyterhub /usr/bin/jupyterhub-singleuser /usr/bin/configurable-http-proxy chpasswd; do
	command -v "$b" > /dev/null || skip_all "no $b (Debian: jupyterhub python3-notebook)"
done
"$HUBPY" -c 'import jupyterhub, notebook, ipykernel, tornado, requests' 2> /dev/null ||
	skip_all "$HUBPY cannot import jupyterhub, notebook, ipykernel, tornado and requests"
. "$here/../users.sh"

# -- the users, who log in by PAM with a password, their homes in $T
mkdir -m 755 "$T/pub/home"
for u in cnhuba cnhubb; do
	test_user "$u" -m -d "$T/pub/home/$u" -s /bin/sh
	mkdir -p "$T/pub/home/$u" && chown "$u:" "$T/pub/home/$u" && chmod 700 "$T/pub/home/$u"
	echo "$u:cudanap-$u-pw" | chpasswd || skip_all "cannot give $u a password"
done
UA=$(id -u cnhuba) UB=$(id -u cnhubb)
status_dirs_gone() { rm -rf "/tmp/cudanap-$UA" "/tmp/cudanap-$UB"; }
status_dirs_gone
at_exit status_dirs_gone

# -- the GPU, one for both users, and the node pager
mkdir -m 1777 "$T/pub/fake"
mkdir -m 755 "$T/run"
# 600 MiB, each process's context 100 (the fake's footprint): small, since a light nap's copy is
# real host memory
gpu_env=(CUDANAP_LIBCUDA="$FAKECUDA" CUDANAP_LIBNVML="$FAKECUDA" CUDANAP_FAKE_DIR="$T/pub/fake"
	CUDANAP_FAKE_GPU_MIB=600 CUDANAP_FAKE_FOOTPRINT_MIB=100)
cat > "$T/pager.ini" << EOF
[pager]
socket = $T/run/pager.sock
state = $T/run/pager.state
min_idle_s = 1
margin_mib = 0
log = debug
EOF
env "${gpu_env[@]}" "$PAGER" -c "$T/pager.ini" 2> "$T/pager.log" &
pager_pid=$!
check "the node pager listens" eventually 20 test -S "$T/run/pager.sock"

# -- cudanap's kernel for every user: a prefix the Hub's servers read, the job INI beside it
cat > "$T/pub/kernel.ini" << EOF
[nap]
make_room = node
pager_socket = $T/run/pager.sock
[restore]
margin_mib = 0
[log]
level = info
EOF
chmod 644 "$T/pub/kernel.ini"
out=$(env -i PATH=/usr/bin:/bin CUDANAP_PYTHON=$HUBPY "$CUDANAP" kernel install --from python3 --nap 0 \
	-c "$T/pub/kernel.ini" --prefix "$T/pub/jupyter" 2>&1)
like "$out" "^installed kernel 'python3-cudanap' .* in $T/pub/jupyter/share/jupyter/kernels/python3-cudanap$" \
	"cudanap's kernel installed where every user's server looks"
chmod -R a+rX "$T/pub/jupyter"

# -- the Hub: PAM, LocalProcessSpawner, its proxy, on loopback ports of its own
port=$(free_port) hub_port=$(free_port) api_port=$(free_port)
mkdir -m 700 "$T/hub"
cat > "$T/hub/jupyterhub_config.py" << EOF
c = get_config()  # noqa
c.JupyterHub.bind_url = "http://127.0.0.1:$port/"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:$hub_port"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:$api_port"
c.ConfigurableHTTPProxy.pid_file = "$T/hub/proxy.pid"
c.JupyterHub.db_url = "sqlite:///$T/hub/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "$T/hub/cookie_secret"
c.JupyterHub.authenticator_class = "jupyterhub.auth.PAMAuthenticator"
c.PAMAuthenticator.open_sessions = False
c.Authenticator.allowed_users = {"cnhuba", "cnhubb"}
c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
c.Spawner.cmd = ["/usr/bin/jupyterhub-singleuser"]
c.Spawner.args = ["--MappingKernelManager.default_kernel_name=python3-cudanap"]
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.environment = {
    "JUPYTER_PATH": "$T/pub/jupyter/share/jupyter",
    "FAKECUDA": "$FAKECUDA",
$([ -z "${CN_SANITIZER_RUNTIME:-}" ] || printf '    "LD_PRELOAD": "%s", "ASAN_OPTIONS": "%s", "UBSAN_OPTIONS": "%s",\n' \
	"$CN_SANITIZER_RUNTIME" "${ASAN_OPTIONS:-}" "${UBSAN_OPTIONS:-}")
$(for e in "${gpu_env[@]}"; do printf '    "%s": "%s",\n' "${e%%=*}" "${e#*=}"; done)
}
EOF
# Debian's proxy finds its modules in /usr/share/nodejs; another node first on PATH does not (under
# the sanitize setup the servers, and so the kernels, load the sanitizer's runtime first, which
# the instrumented preload needs)
(cd "$T/hub" && exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin NODE_PATH=/usr/share/nodejs LANG=C.UTF-8 \
	/usr/bin/jupyterhub -f "$T/hub/jupyterhub_config.py" > "$T/hub/hub.log" 2>&1) &
hub_pid=$!
hub_up() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/hub/api" | grep -q 200; }
# The Hub stops the users' servers as it ends, and they their kernels; what is left of the two
# users this test made (nothing, unless a server hung) is ended by pid before they are removed.
hub_stop() {
	local u p
	kill "$hub_pid" 2> /dev/null
	eventually 30 bash -c "! kill -0 $hub_pid 2> /dev/null"
	[ -f "$T/hub/proxy.pid" ] && kill "$(cat "$T/hub/proxy.pid")" 2> /dev/null
	for u in ${users_made[@]+"${users_made[@]}"}; do
		for p in $(ps -o pid= -u "$u"); do kill "$p" 2> /dev/null; done
	done
	kill "$pager_pid" 2> /dev/null
	true
}
at_exit hub_stop
if ! eventually 60 hub_up; then
	ok 1 "the Hub answers on port $port"
	diag "$(tail -n 20 "$T/hub/hub.log")"
	finish
fi
ok 0 "the Hub and its proxy answer"

coproc HC { env HUB_URL="http://127.0.0.1:$port" "$HUBPY" "$here/hub_client.py" 2>> "$T/client.err"; }
say() { echo "$1" >&"${HC[1]}"; REPLY=; read -r -t 200 REPLY <&"${HC[0]}"; }

say "login cnhuba wrong-password"
like "$REPLY" "^login cnhuba failed" "a wrong password is refused by PAM"
for u in cnhuba cnhubb; do
	say "login $u cudanap-$u-pw"
	is "$REPLY" "login $u ok" "$u logs in through the Hub's page (PAM)"
	say "spawn $u"
	like "$REPLY" "^spawn $u ok /user/$u/" "$u's server started by LocalProcessSpawner, through the Hub's API"
done
[ "${REPLY#spawn cnhubb ok}" != "$REPLY" ] || { diag "$(tail -n 30 "$T/hub/hub.log")"; finish; }

say "kernel cnhuba python3-cudanap"
like "$REPLY" "^kernel cnhuba ok [0-9a-f-]+ [0-9]+$" "A's cudanap kernel starts in A's server"
a_pid=${REPLY##* }
say "cell cnhuba info"
like "$REPLY" "^cell cnhuba info ok [0-9.]+ $a_pid $UA True$" "it runs as A, with the preload"
say "kernel cnhubb default"
b_pid=${REPLY##* }
like "$REPLY" "^kernel cnhubb ok [0-9a-f-]+ [0-9]+$" "B's kernel, none named, starts in B's server"
say "cell cnhubb info"
like "$REPLY" "^cell cnhubb info ok [0-9.]+ $b_pid $UB True$" \
	"cudanap's: the Hub made it the servers' default kernel (Spawner.args)"
STATUS_A=/tmp/cudanap-$UA STATUS_B=/tmp/cudanap-$UB
fa() { STATUS_DIR=$STATUS_A field "$a_pid" "$1"; }
fb() { STATUS_DIR=$STATUS_B field "$b_pid" "$1"; }

# -- A holds 100 + 300 MiB, B 100 + 10: 190 of 600 free
say "cell cnhuba hold 300"
like "$REPLY" "^cell cnhuba hold ok [0-9.]+ alloc 0 0$" "A's cell takes 300 MiB of the GPU"
say "cell cnhubb hold 10"
like "$REPLY" "^cell cnhubb hold ok [0-9.]+ alloc 0 0$" "B's kernel holds 110 MiB"
a_idle() { [ -n "$(fa idle_since)" ] && [ $(($(date +%s%3N) - $(date -d "$(fa idle_since)" +%s%3N))) -ge 1200 ]; }
check "A's kernel idle (its status says since when)" eventually 20 a_idle

# -- B's cell needs 250 MiB more: the pager naps A's kernel, B's cell runs
say "cell cnhubb hold 250"
like "$REPLY" "^cell cnhubb hold ok [0-9.]+ alloc 0 0$" "B's cell of 250 MiB runs: the room was made"
a_asleep() { [ "$(fa state)" = napping ] || [ "$(fa nap)" = napping ]; }
check "A's kernel napped for it" eventually 10 a_asleep
is "$(fa nap_for_pid)" "$b_pid" "A's status: napped for B's kernel"
log_like "$T/pager.log" "for $b_pid \(cnhubb, cuMemAlloc_v2, 250 MiB on GPU 0\): napped $a_pid \(cnhuba, [0-9]+ MiB, idle [0-9]+ s" \
	"the pager's log: its choice, in one line"
say "stderr cnhubb"
like "$REPLY" "made room on GPU 0 for 250 MiB \(cuMemAlloc_v2\) through the node pager: napped $a_pid \(cnhuba" \
	"B's notebook shows the room made, under its cell"

# -- A's next cell wakes it: B's kernel, idle now, napped for it; A's data intact
b_idle() { [ -n "$(fb idle_since)" ] && [ $(($(date +%s%3N) - $(date -d "$(fb idle_since)" +%s%3N))) -ge 1200 ]; }
check "B's kernel idle" eventually 20 b_idle
say "cell cnhuba verify"
like "$REPLY" "^cell cnhuba verify ok [0-9.]+ launch 0 word 0 True data True$" \
	"A's next cell wakes it and finds its data"
b_asleep() { [ "$(fb state)" = napping ] || [ "$(fb nap)" = napping ]; }
check "B's kernel napped for A's wake" eventually 10 b_asleep
is "$(fb nap_for_pid)" "$a_pid" "B's status: napped for A's kernel"
say "cell cnhubb verify"
like "$REPLY" "^cell cnhubb verify ok [0-9.]+ launch 0 word 0 True data True$" \
	"B's next cell wakes B in turn, its data intact"

out=$("$CUDANAP" pager status --state "$T/run/pager.state")
like "$out" $'\n''cnhubb +[1-9][0-9]* +[1-9][0-9]* ' "cudanap pager status: B's needs, and rooms made"
like "$out" $'\n''cnhuba +[0-9]+ +[0-9]+ +[0-9]+ +0 +[0-9.]+ +[1-9][0-9]* +0 +[0-9.]+' "A's kernel napped for another user's"
like "$out" $'\n''cnhubb +[0-9]+ +[0-9]+ +[0-9]+ +0 +[0-9.]+ +[1-9][0-9]* +0 +[0-9.]+' "and B's"
for u in cnhuba cnhubb; do say "stop $u"; done
finish
