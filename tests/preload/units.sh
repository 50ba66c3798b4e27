#!/usr/bin/env bash
# The metrics' systemd units as `meson install` puts them: cudanap-metrics.timer starting
# cudanap-metrics.service, which writes the textfile where Debian's node_exporter reads it, and
# cudanap-metrics-http.service, which serves the metrics; systemd-analyze verify takes them, and
# each service's command, run as systemd runs it (its Environment= and an /etc/default file's
# override, ${VAR} expanded), does its job on a fake driver's processes.
. "$(dirname "$0")/../lib.sh"
install_tree
cli=$(find "$T/inst" -path '*/bin/cudanap' -type f)
unit_of() { find "$T/inst" -path "*/systemd/system/$1" -type f; }
svc=$(unit_of cudanap-metrics.service) timer=$(unit_of cudanap-metrics.timer)
http=$(unit_of cudanap-metrics-http.service)
check "the timer and both services installed, in one directory" \
	test -n "$svc" -a -n "$timer" -a -n "$http" -a "$(dirname "$svc")" = "$(dirname "$timer")" -a "$(dirname "$svc")" = "$(dirname "$http")"
[ -n "$svc" ] && [ -n "$timer" ] && [ -n "$http" ] || finish

# key UNIT KEY: the unit's values of KEY, one a line
key() { sed -n "s/^$2=//p" "$1"; }
is "$(key "$timer" WantedBy):$(key "$timer" Unit)" "timers.target:" \
	"the timer: enabled into timers.target, starting the service of its name"
is "$(key "$timer" OnUnitActiveSec)" 15s "every 15 seconds"
is "$(key "$svc" Type)" oneshot "the textfile's service: a oneshot"
is "$(key "$svc" EnvironmentFile):$(key "$http" EnvironmentFile)" "-/etc/default/cudanap-metrics:-/etc/default/cudanap-metrics" \
	"both take their settings from /etc/default/cudanap-metrics, where there is one"
installed_bin=$(key "$svc" ExecStart | cut -d' ' -f1)
is "$(dirname "$installed_bin")/cudanap" "${cli#"$T/inst"}" "ExecStart runs the installed cudanap"
tfdir=$(key "$svc" Environment | sed -n 's/^CUDANAP_METRICS_TEXTFILE_DIR=//p')
if command -v prometheus-node-exporter > /dev/null; then
	is "$tfdir" "$(prometheus-node-exporter --help 2>&1 | sed -n 's/.*--collector.textfile.directory="\([^"]*\)".*/\1/p')" \
		"the textfile where Debian's node_exporter reads it ($tfdir)"
else
	skip "the textfile directory is node_exporter's" "no prometheus-node-exporter"
fi

# -- systemd-analyze verify, the units' program where the test installed it
mkdir "$T/units"
for u in "$svc" "$timer" "$http"; do
	sed "s|$installed_bin|$cli|" "$u" > "$T/units/${u##*/}"
done
# Documentation=man:cudanap(1) is checked against the installed man page, where scdoc made one
man1=$(find "$T/inst" -path '*/man1/cudanap.1' -type f)
if command -v systemd-analyze > /dev/null; then
	[ -n "$man1" ] && man=yes || man=no
	out=$(cd "$T/units" && MANPATH=${man1%/man1/*} systemd-analyze verify --man=$man ./*.service \
		./*.timer 2>&1); rc=$?
	is "$rc:$out" "0:" "systemd-analyze verify takes the three units: no error, no warning${man1:+, their man page installed}"
else
	skip "systemd-analyze verify" "no systemd-analyze (Debian: systemd)"
fi

# run UNIT VAR=VALUE...: the unit's ExecStart as systemd runs it: its Environment=, then the
# variables its EnvironmentFile= would set (given here), ${VAR} expanded, no shell; in the
# background, its pid in $unit_pid
run() {
	local unit=$1 line
	shift
	line=$(key "$unit" ExecStart)
	env -i PATH="$PATH" CUDANAP_LIBCUDA="$FAKECUDA" $(key "$unit" Environment) "$@" \
		bash -c 'set -f; eval "set -- $1"; exec "$@"' _ "${line//$installed_bin/$cli}" &
	unit_pid=$!
}

# -- the textfile's service, its directory overridden as /etc/default/cudanap-metrics would
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake" "$T/tf"
write_ini
start A "$TARGET"
"$cli" suspend -c "$T/job.ini" "$A_pid" > /dev/null
run "$svc" CUDANAP_METRICS_TEXTFILE_DIR="$T/tf" CUDANAP_CONFIG="$T/job.ini"
wait "$unit_pid"
is "$?:$(ls -A "$T/tf")" "0:cudanap.prom" "cudanap-metrics.service's command writes DIR/cudanap.prom, exit 0"
like "$(cat "$T/tf/cudanap.prom" 2> /dev/null)" "cudanap_process_state\{pid=\"$A_pid\",[^}]*state=\"checkpointed\"\} 1" \
	"with the process's series"
if command -v promtool > /dev/null; then
	check "which promtool takes" promtool check metrics < "$T/tf/cudanap.prom"
fi

# -- the HTTP service, on a port of the test's
port=$(free_port)
run "$http" CUDANAP_METRICS_LISTEN="127.0.0.1:$port" CUDANAP_CONFIG="$T/job.ini"
http_pid=$unit_pid
up() { curl -sf --max-time 5 "http://127.0.0.1:$port/metrics" > "$T/scraped"; }
check "cudanap-metrics-http.service's command serves the metrics" eventually 20 up
like "$(cat "$T/scraped")" "cudanap_process_state\{pid=\"$A_pid\",[^}]*state=\"checkpointed\"\} 1" \
	"with the process's series"
is "$(key "$http" Environment)" "CUDANAP_METRICS_LISTEN=127.0.0.1:9877" "by default on this host alone"
kill "$http_pid"
wait "$http_pid" 2> /dev/null
"$cli" resume -c "$T/job.ini" "$A_pid" > /dev/null
ask A quit
finish
