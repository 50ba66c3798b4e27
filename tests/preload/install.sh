#!/usr/bin/env bash
# `cudanap run` after `meson install`: the installed CLI finds the installed preload.
. "$(dirname "$0")/../lib.sh"
install_tree
cli=$(find "$T/inst" -path '*/bin/cudanap' -type f)
lib=$(find "$T/inst" -name libcudanap.so -type f)
ctl=$(find "$T/inst" -name cudanap-ctl -type f)
check "cudanap, libcudanap.so and cudanap-ctl installed" test -x "$cli" -a -f "$lib" -a -x "$ctl"
check "the example INI installed" test -n "$(find "$T/inst" -name cudanap.ini)"
out=$(env -u CUDANAP_PRELOAD "$cli" run -- /bin/sh -c 'echo "$LD_PRELOAD"' 2>&1)
is "$out" "$(readlink -f "$lib")" "the installed cudanap run preloads the installed library, which finds its controller"
out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 "$cli" run -- /bin/sh -c 'echo "$LD_PRELOAD"')
is "$out" "/lib/x86_64-linux-gnu/libc.so.6:$(readlink -f "$lib")" "an existing LD_PRELOAD is kept and ours appended"
nccl="ncclAllGather ncclAllReduce ncclAlltoAll ncclBcast ncclBroadcast ncclCommAbort ncclCommDeregister ncclCommDestroy ncclCommFinalize ncclCommGrow ncclCommInitAll ncclCommInitRank ncclCommInitRankConfig ncclCommInitRankScalable ncclCommRegister ncclCommShrink ncclCommSplit ncclGather ncclGroupEnd ncclGroupStart ncclRecv ncclReduce ncclReduceScatter ncclScatter ncclSend"
ipc="cudaIpcCloseMemHandle cudaIpcOpenMemHandle"
exports=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | LC_ALL=C sort)
is "$(grep -v '^cu[A-Z]' <<< "$exports" | tr '\n' ' ')" "_Exit __sysv_signal _exit bsd_signal $ipc dlsym mmap mmap64 munmap $nccl sigaction signal sysv_signal " \
	"the preload exports only the symbols it interposes (libc's, NCCL's, the runtime's IPC imports)"
names=$(sed -n 's/^CN_FN(\([A-Za-z0-9_]*\),.*/\1/p' "$(dirname "$0")/../../preload/cuda/names.h" | LC_ALL=C sort)
is "$(grep '^cu[A-Z]' <<< "$exports")" "$names" "and the driver functions of the gate's table, each once"
printf '[status]\ndir = %s\n' "$T/st" > "$T/i.ini"
mkdir -m 700 "$T/st"
CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T "$cli" run -c "$T/i.ini" -- sleep 5 &
p=$!
eventually 20 test -e "$T/st/$p.json"
out=$("$cli" suspend "$p" 2>&1)
like "$out" "nothing to suspend" "the installed library starts the installed controller"

# -- the node pager: its program, units and example policy; it finds the installed controller
pgr=$(find "$T/inst" -path '*/sbin/cudanap-pager' -type f)
check "cudanap-pager, its systemd units and example policy installed" test -x "$pgr" -a \
	-n "$(find "$T/inst" -name cudanap-pager.socket)" -a -n "$(find "$T/inst" -name cudanap-pager.service)" \
	-a -n "$(find "$T/inst" -path '*/examples/pager.ini')"
like "$(grep '^ExecStart=' "$(find "$T/inst" -name cudanap-pager.service)")" "^ExecStart=/.*/sbin/cudanap-pager -c /etc/cudanap/pager.ini$" \
	"the service runs the installed pager"
printf '[pager]\nsocket = %s/pager.sock\nstate = %s/pager.state\n' "$T" "$T" > "$T/pager.ini"
CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T "$pgr" -c "$T/pager.ini" 2> "$T/pager.log" &
pgr_pid=$!
eventually 20 test -S "$T/pager.sock"
out=$(python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(b"need gpu=GPU-face0000-0000-0000-0000-000000000000 mib=10 context=0 light=0 what=x")
s.settimeout(20)
print(s.recv(2000).decode())' "$T/pager.sock" 2>&1)
like "$out" "^made gpu=0 " "the installed pager answers a need through the installed controller (NVML)"
kill "$pgr_pid"

# -- the man pages (where scdoc built them) and the bash completion
if [ -f "$BUILD_ROOT/docs/cudanap.1" ]; then
	check "cudanap(1), cudanap.ini(5) and cudanap-pager(8) installed" test -n "$(find "$T/inst" -path '*/man1/cudanap.1')" -a -n "$(find "$T/inst" -path '*/man5/cudanap.ini.5')" -a -n "$(find "$T/inst" -path '*/man8/cudanap-pager.8')"
	like "$(MANWIDTH=100 man -l "$(find "$T/inst" -path '*/man1/cudanap.1')" 2> /dev/null)" "--json" "cudanap(1) documents --json"
else
	diag "scdoc was not found when meson set up: no man pages to check"
fi
comp=$(find "$T/inst" -path '*/completions/cudanap' -type f)
check "the bash completion installed" test -n "$comp"
complete_words() { # complete_words WORD...: what the completion offers for the last word
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _cudanap; echo "${COMPREPLY[*]}"' \
		_ "$comp" "$@"
}
is "$(complete_words "$cli" su)" "suspend" "it completes the commands"
like "$(complete_words "$cli" resume --)" "--gpu-map" "each command's options"
like "$(PATH=$(dirname "$cli"):$PATH complete_words "$cli" suspend "")" "(^| )$p( |$)" "and the PIDs of cudanap processes"

# -- the Jupyter helper: the installed CLI runs the installed one (a stand-in Python says which)
check "the kernelspec helper installed" test -n "$(find "$T/inst" -path '*/share/cudanap/kernelspec.py')"
# (echo as a venv's interpreter, the system's library its home: root runs no script in a
# Python's place; not in /tmp itself, anyone's to write in)
ver=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2> /dev/null)
if [ -n "$ver" ]; then
	mkdir -p "$T/showpy/bin"
	cp /bin/echo "$T/showpy/bin/python3"
	printf 'home = /usr/bin\nversion = %s\n' "$ver" > "$T/showpy/pyvenv.cfg"
	out=$(CUDANAP_PYTHON=$T/showpy/bin/python3 "$cli" kernel list 2>&1)
	is "$out" "-I -S $(readlink -f "$(find "$T/inst" -path '*/share/cudanap/kernelspec.py')") list" \
		"cudanap kernel runs it with the Python that runs Jupyter, isolated (-I -S)"
else
	skip "the installed helper, run isolated" "no /usr/bin/python3 whose library a stand-in can name"
fi
kill "$p"
finish
