#!/usr/bin/env bash
# Jupyter kernels that nap, with the fake driver: `cudanap kernel install` wraps a kernelspec, and
# a real Jupyter client (jupyter_client's KernelManager, as a notebook server uses it) starts it,
# runs cells that use the "GPU", interrupts one, lets the kernel nap, wakes it with the next cell,
# and shuts it down; the same with [nap] depth = light (the memory cudanap owns moved to the host
# and put back at its address by the next cell); `cudanap run` is the kernel itself (same pid,
# SIGINT and SIGTERM reach it, its exit status); list (and --json) and remove; the refusals.
. "$(dirname "$0")/../lib.sh"
py=$(python_with jupyter_client ipykernel)
[ -n "$py" ] || skip_all "no Python here imports jupyter_client and ipykernel"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake FAKECUDA
export JUPYTER_DATA_DIR=$T/jupyter JUPYTER_CONFIG_DIR=$T/jupyter-config JUPYTER_RUNTIME_DIR=$T/jupyter-run
export JUPYTER_PATH=$T/jupyter IPYTHONDIR=$T/ipython PYDEVD_DISABLE_FILE_VALIDATION=1
mkdir -p "$T/fake" "$T/jupyter/kernels/fakepy"
write_ini "[log]" "level = info"

# the kernel to wrap: Python's, with an environment of its own (the sanitizer's runtime first
# under the sanitize setup: cudanap run appends the preload to it)
cat > "$T/jupyter/kernels/fakepy/kernel.json" << EOF
{ "argv": ["$py", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
  "display_name": "Fake Python", "language": "python",
  "env": {"CUDANAP_TEST_MARK": "kept"${CN_SANITIZER_RUNTIME:+, \"LD_PRELOAD\": \"$CN_SANITIZER_RUNTIME\"}} }
EOF
echo logo > "$T/jupyter/kernels/fakepy/logo-32x32.png"

# -- install, list
out=$("$CUDANAP" kernel install --from fakepy --nap 1 -c "$T/job.ini" 2>&1)
is "$out" "installed kernel 'fakepy-cudanap' (Fake Python under cudanap, naps after 1 s idle) in $T/jupyter/kernels/fakepy-cudanap" \
	"cudanap kernel install wraps a kernelspec, and says where"
spec=$T/jupyter/kernels/fakepy-cudanap/kernel.json
jq_() { "$py" -c "import json, sys; d = json.load(open(sys.argv[1])); print($1)" "$spec"; }
is "$(jq_ "' '.join(d['argv'])")" "$(readlink -f "$CUDANAP") run -c $T/job.ini --nap 1 -- $py -m ipykernel_launcher -f {connection_file}" \
	"its argv: the wrapped one behind cudanap run, by absolute paths"
is "$(jq_ "d['env']['CUDANAP_TEST_MARK'], d['display_name'], d['language'], d['metadata']['cudanap']")" \
	"kept Fake Python (cudanap) python {'from': 'fakepy', 'nap_s': 1, 'config': '$T/job.ini'}" \
	"its env, language and display name kept, its settings under metadata.cudanap"
check "the wrapped kernel's other files come along" test -f "$T/jupyter/kernels/fakepy-cudanap/logo-32x32.png"
out=$("$CUDANAP" kernel list)
like "$out" $'\n''fakepy-cudanap +1 s +fakepy +'"$T/jupyter/kernels/fakepy-cudanap"$'(\n|$)' "cudanap kernel list: the wrapper, its nap and what it wraps"
like "$out" $'\n''fakepy +- +- +' "and the other kernels"
out=$("$CUDANAP" kernel list --json)
is "$("$py" -c 'import json, sys; print([(k["name"], k["cudanap"], k["nap_s"], k["wraps"], k["broken"], k["directory"]) for k in json.load(sys.stdin)["kernels"] if k["name"].startswith("fakepy")])' <<< "$out")" \
	"[('fakepy', False, None, None, None, '$T/jupyter/kernels/fakepy'), ('fakepy-cudanap', True, 1, 'fakepy', None, '$T/jupyter/kernels/fakepy-cudanap')]" \
	"cudanap kernel list --json: the same, as one JSON object"

# -- a notebook's life: start, cells, an interrupt, a nap, the next cell wakes it, shutdown
coproc KC { "$py" "$(dirname "$0")/kernel_client.py" fakepy-cudanap 2>> "$T/client.err"; }
say() { echo "$1" >&"${KC[1]}"; REPLY=; read -r -t 180 REPLY <&"${KC[0]}"; }
say start
pid=${REPLY#started }
like "$REPLY" "^started [0-9]+$" "KernelManager starts the wrapped kernel"
say "cell info"
is "$REPLY" "cell info ok $pid $pid kept True" \
	"the kernel is the process the manager started (cudanap run execs it), leads its own group, has its env and the preload"
say "cell fake_work"
is "$REPLY" "cell fake_work ok launch 0" "a cell uses the GPU"
t0=$(date +%s%3N)
say interrupt
like "$REPLY" "^interrupt KeyboardInterrupt [0-9.]+$" "an interrupt stops a running cell (KeyboardInterrupt, ${REPLY##* } s)"
check "idle a second, the kernel naps" napped "$pid" 20
is_field "$pid" nap:naps "napping:1" "its status says so"
say "cell fake_verify"
is "$REPLY" "cell fake_verify ok launch 0 verify True" "the next cell wakes it, its memory intact"
is_field "$pid" wakes 1 "one wake"
got_wake_line() { say "cell settle"; say stderr; [[ $REPLY =~ cudanap\[$pid\]:\ woke\ for\ a\ driver\ call ]]; }
tries=0
until got_wake_line || [ $((tries += 1)) -ge 10 ]; do :; done
check "the log's wake line reaches the notebook, on a cell's stderr (ipykernel forwards the process's)" \
	got_wake_line
say shutdown
is "$REPLY" "exited 0" "a shutdown: the kernel exits 0, as the manager sees it"
check "and is gone" eventually 10 bash -c "! kill -0 $pid 2> /dev/null"

# -- SIGTERM from the manager reaches the kernel itself
say start
pid=${REPLY#started }
say "cell info"
is "${REPLY%% kept*}" "cell info ok $pid $pid" "a second kernel starts"
say term
is "$REPLY" "exited -15" "SIGTERM from the manager ends the kernel; its status is the signal's"
# -- a light nap ([nap] depth = light): the memory cudanap owns moved to the host, the context kept;
# the next cell puts it back at the same address
write_ini "[log]" "level = info" "[nap]" "depth = light"
say start
pid=${REPLY#started }
like "$REPLY" "^started [0-9]+$" "light: a kernel starts"
say "cell fake_work"
is "$REPLY" "cell fake_work ok launch 0" "light: a cell uses the GPU"
say "cell fake_owned"
is "$REPLY" "cell fake_owned ok alloc 0 0" "light: a cell allocates 64 MiB and writes a word there"
check "light: idle a second, the kernel naps lightly" eventually 20 light_napped "$pid"
w=$(field "$pid" wakes) # a full nap before the cell that allocated is possible under load
like "$(field "$pid" light_mib)" "^64(\.0+)?$" "light: its status says 64 MiB are on the host"
say "cell fake_owned_verify"
is "$REPLY" "cell fake_owned_verify ok launch 0 word 0 0xc0ffee" \
	"light: the next cell wakes it, the word back at its address"
is_field "$pid" wakes $((w + 1)) "light: one wake"
say "cell fake_verify"
is "$REPLY" "cell fake_verify ok launch 0 verify True" "light: what the driver kept is intact too"
say shutdown
is "$REPLY" "exited 0" "light: a shutdown, exit 0"
check "light: and is gone" eventually 10 bash -c "! kill -0 $pid 2> /dev/null"
write_ini "[log]" "level = info"

exec {KC[1]}>&-
wait "$KC_PID" 2> /dev/null
[ ! -s "$T/client.err" ] || diag "the client's stderr: $(cat "$T/client.err")"

# -- refusals and remove
out=$("$CUDANAP" kernel install --from fakepy-cudanap --name again 2>&1)
is "$?:$out" "1:cudanap kernel: kernel 'fakepy-cudanap' already runs under cudanap (it wraps 'fakepy'); install from that one" \
	"a wrapper is not wrapped again"
out=$("$CUDANAP" kernel install --from nosuch 2>&1)
like "$?:$out" "^1:cudanap kernel: no kernel named 'nosuch' \(kernels here: .*fakepy.*\)$" "a missing kernel: the ones there are"
out=$("$CUDANAP" kernel install --from fakepy --name fakepy 2>&1)
is "$?:$out" "1:cudanap kernel: the wrapper needs a name of its own, not 'fakepy' (the kernel it wraps)" \
	"the wrapper does not take the wrapped kernel's place"
out=$("$CUDANAP" kernel install --name 'a/b' 2>&1)
is "$?:$out" "2:cudanap kernel: 'a/b' is not a kernel name (letters, digits, '.', '_' and '-', 64 at most)" "a bad name"
out=$("$CUDANAP" kernel install --user --prefix "$T/p" 2>&1)
is "$?:$out" "2:cudanap kernel: --user, --sys-prefix and --prefix are one choice" "one place to install"
printf '[nap]\nidle_s = soon\n' > "$T/bad.ini"
out=$("$CUDANAP" kernel install --from fakepy -c "$T/bad.ini" 2>&1)
like "$?:$out" "^78:.*bad.ini" "a broken INI is refused before anything is written"
out=$(CUDANAP_PYTHON=$T/nopython "$CUDANAP" kernel list 2>&1)
is "$?:$out" "69:cudanap kernel: CUDANAP_PYTHON: $T/nopython: No such file or directory" "CUDANAP_PYTHON that is not there"
# a wrapper script as CUDANAP_PYTHON: root cannot check the library of the Python it starts
mkdir "$T/bin"
printf '#!/bin/sh\nexec %s "$@"\n' "$py" > "$T/bin/pywrap"
chmod +x "$T/bin/pywrap"
out=$(CUDANAP_PYTHON=$T/bin/pywrap "$CUDANAP" kernel list 2>&1); rc=$?
if [ "$(id -u)" = 0 ]; then
	is "$rc:$out" "69:cudanap kernel: CUDANAP_PYTHON: $T/bin/pywrap: a script, not a Python: root checks the standard library of the interpreter it runs, which a script hides; name the interpreter itself; not run" \
		"a wrapper script, for root: refused in one line that says what to name"
else
	like "$rc:$out" "^0:NAME" "a wrapper script of the user's own: run"
fi
# a Python without Jupyter (a jupyter_client of its own in its site directory that says it was
# asked, and fails), and the one `jupyter` on PATH runs first (in a directory of the test's: one in
# /tmp itself is not run, /tmp being anyone's to write in)
root_python
if [ -n "$rootpy" ]; then
	mkdir "${rootpy%/bin/*}/lib/python3/dist-packages/jupyter_client"
	printf 'import sys\nopen("%s/python-asked.log", "a").write(" ".join(sys.argv) + "\\n")\nraise ImportError("a stand-in")\n' "$T" \
		> "${rootpy%/bin/*}/lib/python3/dist-packages/jupyter_client/__init__.py"
	out=$(CUDANAP_PYTHON=$rootpy "$CUDANAP" kernel list 2>&1)
	is "$?:$out" "69:cudanap kernel: $rootpy cannot import jupyter_client (a stand-in); set CUDANAP_PYTHON to the Python that runs Jupyter" \
		"a Python without jupyter_client: one line"
	printf '#!/usr/bin/env %s\n' "$rootpy" > "$T/bin/jupyter"
	chmod +x "$T/bin/jupyter"
	out=$(PATH=$T/bin:$PATH "$CUDANAP" kernel list 2>&1)
	like "$(cat "$T/python-asked.log" 2> /dev/null)" "kernelspec.py probe" "without CUDANAP_PYTHON, the Python of 'jupyter' on PATH is the one asked"
	like "$out" "^NAME" "and, as it has no jupyter_client, the next one answers"
else
	skip "a Python without jupyter_client" "no /run of root's alone to make one in"
fi
out=$("$CUDANAP" kernel install --from fakepy --nap 5 --name other --prefix "$T/pfx" 2>&1)
like "$out" "in $T/pfx/share/jupyter/kernels/other$" "--prefix DIR: under DIR/share/jupyter/kernels"
out=$("$CUDANAP" kernel install --from fakepy --nap 30 2>&1)
like "$out" "naps after 30 s idle" "installing again replaces cudanap's own kernel"
is "$(jq_ "d['argv'][3]")" 30 "with the new settings"
out=$("$CUDANAP" kernel remove fakepy 2>&1)
like "$?:$out" "^1:cudanap kernel: kernel 'fakepy' is not cudanap's" "remove touches only cudanap's kernels"
out=$("$CUDANAP" kernel remove fakepy-cudanap 2>&1)
is "$?:$out" "0:removed kernel 'fakepy-cudanap' ($T/jupyter/kernels/fakepy-cudanap)" "cudanap kernel remove"
check "the wrapped kernel stays" test -f "$T/jupyter/kernels/fakepy/kernel.json"
out=$("$CUDANAP" kernel list --nap 3 2>&1)
is "$?:$out" "2:cudanap kernel: list and remove take no options but list's --json" "list takes no other options"
out=$("$CUDANAP" kernel remove --json x 2>&1)
is "$?:$out" "2:cudanap kernel: --json is for list" "--json is for list only"
finish
