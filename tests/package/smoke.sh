#!/usr/bin/env bash
# The Debian packages as installed (cudanap, cudanap-demo): what an operator runs first. Run by
# .ci/run after it installs them; skips where they are not installed.
. "$(dirname "$0")/../lib.sh"
dpkg-query -W -f='${Status}' cudanap 2> /dev/null | grep -q 'ok installed' ||
	skip_all "the cudanap package is not installed"
ver=$(dpkg-query -W -f='${Version}' cudanap)

is "$(cudanap --version)" "cudanap $ver" "cudanap --version says the package's version"
is "$(command -v cudanap)" "/usr/bin/cudanap" "cudanap is on PATH"
# -- the demo on the fake driver, as a new user runs it
out=$(cd / && timeout 120 cudanap-demo 2>&1)
rc=$?
is "$rc" 0 "cudanap-demo exits 0"
like "$out" "every byte verified after the resume" "the demo suspends, resumes and checks its memory"
like "$out" "suspended in [0-9.]+ ms" "and prints the suspend's time"
like "$out" "fake driver" "every line says it ran on the fake driver"
[ "$rc" = 0 ] || diag "$out"
# -- the installed library and controller: a program under cudanap run, suspended and resumed
mkdir -m 700 "$T/fake"
fake=$(dpkg -L cudanap-demo | grep '/libfakecuda.so$')
export CUDANAP_LIBCUDA=$fake CUDANAP_LIBNVML=$fake CUDANAP_FAKE_DIR=$T/fake
CUDANAP=/usr/bin/cudanap
write_ini
start A "$(dpkg -L cudanap-demo | grep '/fake_target$')"
check "a program starts under the installed cudanap run" test -n "$A_pid"
like "$(tr '\0' '\n' < "/proc/$A_pid/environ" | grep '^LD_PRELOAD=')" "=/usr/lib/[^/]*/cudanap/libcudanap.so$" \
	"with the installed preload"
cli suspend "$A_pid"
like "$out" "^$A_pid: suspended in" "the installed preload suspends it through the installed controller"
cli resume "$A_pid"
like "$out" "^$A_pid: resumed in" "and resumes it"
ask A verify 60
is "$REPLY" "verify ok" "its memory intact"
ask A quit
# -- the man pages
for page in cudanap cudanap.ini cudanap-demo; do
	like "$(MANWIDTH=100 man "$page" 2> /dev/null | head -n 20)" "NAME" "man $page shows its page"
done
like "$(MANWIDTH=100 man cudanap 2> /dev/null)" "check-config" "cudanap(1) documents the commands"
# -- the bash completion, loaded as bash-completion loads it: on demand, by the command's name
complete_words() { # complete_words WORD...: what the installed completion offers for the last word
	bash -c '. /usr/share/bash-completion/bash_completion; _completion_loader cudanap
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _cudanap; echo "${COMPREPLY[*]}"' _ "$@"
}
if [ -f /usr/share/bash-completion/bash_completion ]; then
	is "$(complete_words cudanap che)" "check-config" "bash completes cudanap's commands"
	like "$(complete_words cudanap resume --)" "--gpu-map" "and each command's options"
else
	skip "bash completion" "bash-completion is not installed"
fi
# -- the node pager: its program, its controller where it looks, its units installed and not
# enabled (its policy comes first), its page and its example policy
is "$(command -v cudanap-pager)" "/usr/sbin/cudanap-pager" "cudanap-pager is in sbin"
check "it looks for the installed controller" grep -aq "^/usr/libexec/cudanap/cudanap-ctl$" \
	<(tr '\0' '\n' < /usr/sbin/cudanap-pager)
check "which is there" test -x /usr/libexec/cudanap/cudanap-ctl
like "$(cudanap check-config /usr/share/doc/cudanap/examples/pager.ini)" \
	"^/usr/share/doc/cudanap/examples/pager.ini: ok \(the node pager's policy" "the example policy passes check-config"
like "$(MANWIDTH=100 man cudanap-pager 2> /dev/null | head -n 20)" "NAME" "man cudanap-pager shows its page"
for u in cudanap-pager.socket cudanap-pager.service; do
	check "$u is installed" test -f "/lib/systemd/system/$u"
	check "and not enabled" test ! -e "/etc/systemd/system/sockets.target.wants/$u" -a \
		! -e "/etc/systemd/system/multi-user.target.wants/$u"
done
if command -v systemd-analyze > /dev/null; then
	out=$(systemd-analyze verify --man=no /lib/systemd/system/cudanap-pager.socket \
		/lib/systemd/system/cudanap-pager.service 2>&1)
	is "$?:$out" "0:" "systemd-analyze verify takes the installed units"
else
	skip "systemd-analyze verify of the units" "no systemd-analyze"
fi
# -- the metrics' units: installed, none enabled (the operator picks the textfile or HTTP)
for u in cudanap-metrics.timer cudanap-metrics.service cudanap-metrics-http.service; do
	check "$u is installed, not enabled" test -f "/lib/systemd/system/$u" -a \
		-z "$(find /etc/systemd/system -name "$u" 2> /dev/null)"
done
if command -v systemd-analyze > /dev/null; then
	out=$(cd /lib/systemd/system && systemd-analyze verify --man=no cudanap-metrics.timer \
		cudanap-metrics.service cudanap-metrics-http.service 2>&1)
	is "$?:$out" "0:" "systemd-analyze verify takes the metrics' units"
else
	skip "systemd-analyze verify of the metrics' units" "no systemd-analyze"
fi
out=$(timeout 10 cudanap metrics --json 2>&1)
is "$?:${out:0:12}" '0:{"metrics":[' "the installed cudanap metrics --json"
# -- the Slurm plugin, where Debian's Slurm looks for plugins by name
check "the SPANK plugin is in slurm-wlm's plugin directory" \
	test -n "$(dpkg -L cudanap | grep '/slurm-wlm/spank_cudanap.so$')"
finish
