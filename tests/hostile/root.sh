#!/usr/bin/env bash
# Root's own commands against what a user planted (a third round, and a fourth's Pythons): root's
# `cudanap kernel` run in a directory the attacker can write imports none of the attacker's
# Python, runs no `jupyter` or python3 found there through PATH, nor a Python the attacker could
# change, nor one whose standard library or site packages the attacker could write (its lib/, a
# sticky directory Python looks in for one, a lib/ above its prefix where Python looks for its
# zip first, a package directory of a site directory), nor a wrapper script of root's that starts
# such a Python; root's
# status and metrics, while the attacker flips a link in its status directory's path between its
# own directory and the victim's, remove nothing of the victim's (and still remove a stale file of
# the victim's own in a directory root visits for the victim); twenty decoy processes with status
# directories of their own hide no one from root's table or metrics; a number no status file may
# hold makes the file unbelieved, and root's --json stays JSON; a kernel.json with escape
# sequences or a malformed cudanap entry is listed with its control characters replaced, in one
# line, and the listing goes on.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/users.sh"

json_ok() { python3 -c 'import json, sys; json.loads(sys.stdin.read())' 2> /dev/null; }

# -- 1. root's cudanap kernel in the attacker's project directory
py=$(python_with jupyter_client)
proj=$T/pub/proj
"${AS_A[@]}" mkdir -m 755 "$proj" "$proj/jupyter_client"
"${AS_A[@]}" sh -c 'printf "import os\nopen(\"%s/ran-import\", \"w\").write(str(os.getuid()))\n" "$1" > "$2/jupyter_client/__init__.py"' _ "$T/pub" "$proj"
"${AS_A[@]}" sh -c 'printf "#!/bin/sh\nid -u > %s/ran-exec\n" "$1" > "$2/python3" && cp "$2/python3" "$2/jupyter" && chmod 755 "$2/python3" "$2/jupyter"' _ "$T/pub" "$proj"
export JUPYTER_DATA_DIR=$T/jupyter JUPYTER_CONFIG_DIR=$T/jupyter-config JUPYTER_PATH=$T/jupyter
export JUPYTER_RUNTIME_DIR=$T/jupyter-run IPYTHONDIR=$T/ipython PYDEVD_DISABLE_FILE_VALIDATION=1
mkdir -p "$T/jupyter/kernels"
if [ -n "$py" ]; then
	out=$(cd "$proj" && "$CUDANAP" kernel list 2>&1); rc=$?
	like "$rc:$out" "^0:NAME +NAP +WRAPS +DIRECTORY" "root's kernel list in the attacker's directory answers"
	check "and imports no jupyter_client planted there (python -I, from /)" test ! -e "$T/pub/ran-import"
	out=$(cd "$proj" && PATH=":/usr/local/bin:/usr/bin:/bin" "$CUDANAP" kernel list 2>&1); rc=$?
	check "PATH with an empty entry: the jupyter and python3 planted in the working directory are not run (rc $rc)" \
		test ! -e "$T/pub/ran-exec" -a ! -e "$T/pub/ran-import"
	out=$(cd "$proj" && CUDANAP_PYTHON="$proj/python3" "$CUDANAP" kernel list 2>&1); rc=$?
	like "$rc:$out" "^69:cudanap kernel: CUDANAP_PYTHON: $proj/python3: owned by uid $A, mode 755: another user could change it; not run$" \
		"a Python the attacker owns is not run, even when named, in one line"
	check "and it did not run" test ! -e "$T/pub/ran-exec"
else
	skip "root's kernel list in the attacker's directory" "no Python here imports jupyter_client"
fi

# -- 1b. a Python of root's whose site directory the attacker can write (a shared environment):
# no .pth file there runs; one in a sticky directory anyone can write in (its pyvenv.cfg and lib/
# beside it): not run at all
sysp=$(readlink -f /usr/bin/python3 2> /dev/null)
if [ -x "$sysp" ] && "$sysp" -m venv --copies --without-pip "$T/pub/venv" > /dev/null 2>&1; then
	sp=$("$T/pub/venv/bin/python3" -c 'import site; print(site.getsitepackages()[0])')
	chmod 777 "$sp"
	"${AS_A[@]}" sh -c 'printf "import os; open(\"%s/ran-pth\", \"w\").write(str(os.getuid()))\n" "$1" > "$2/evil.pth"' _ "$T/pub" "$sp"
	out=$(cd "$proj" && CUDANAP_PYTHON="$T/pub/venv/bin/python3" "$CUDANAP" kernel list 2>&1); rc=$?
	check "a .pth file the attacker put in a Python's site directory is not run by root (rc $rc)" test ! -e "$T/pub/ran-pth"
	mkdir -m 1777 "$T/pub/scr"
	mkdir -m 755 "$T/pub/scr/bin"
	cp "$sysp" "$T/pub/scr/bin/python3"
	"${AS_A[@]}" sh -c 'printf "home = /usr/bin\ninclude-system-site-packages = true\n" > "$1/pyvenv.cfg"' _ "$T/pub/scr"
	out=$(cd "$proj" && CUDANAP_PYTHON="$T/pub/scr/bin/python3" "$CUDANAP" kernel list 2>&1); rc=$?
	is "$rc:$out" "69:cudanap kernel: CUDANAP_PYTHON: $T/pub/scr/bin/python3: in $T/pub/scr, which another user may write to; not run" \
		"a Python beside a directory anyone can write in (its pyvenv.cfg): not run, in one line"
else
	skip "a Python of root's with a site directory the attacker can write" "no /usr/bin/python3 that makes a venv"
fi

# -- 1c. a Python of root's, in directories only root may write, whose standard library another
# user can write: its prefix's lib/ made 0777, or no lib/ of its own below a sticky directory where
# Python looks next (it goes up from its directory for lib/pythonX.Y/os.py), or a package directory
# anyone may write in a site directory of its prefix: the attacker's encodings or jupyter_client
# planted there never runs as root; the Python is refused in one line
sysp=$(readlink -f /usr/bin/python3 2> /dev/null)
ver=$("$sysp" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2> /dev/null)
plant() { # plant DIR: the attacker's copy of the standard library in DIR/lib/pythonX.Y, links to
	# the real one but for encodings/__init__.py (imported before io: posix's calls), which says
	# it ran
	"${AS_A[@]}" sh -c 'mkdir -p "$1/lib" && cp -rs "$2" "$1/lib/python$3" && e="$1/lib/python$3/encodings/__init__.py" &&
		rm "$e" && { printf "import posix\nposix.close(posix.open(\"%s/ran-stdlib\", posix.O_WRONLY | posix.O_CREAT, 0o644))\n" "$4"; cat "$2/encodings/__init__.py"; } > "$e"' \
		_ "$1" "/usr/lib/python$ver" "$ver" "$T/pub"
}
if [ -x "$sysp" ] && [ -n "$ver" ] && [ -d "/usr/lib/python$ver/encodings" ]; then
	mkdir -m 755 "$T/py" "$T/py/bin"
	cp "$sysp" "$T/py/bin/python$ver"
	mkdir -m 777 "$T/py/lib"
	plant "$T/py"
	out=$(cd "$proj" && CUDANAP_PYTHON="$T/py/bin/python$ver" "$CUDANAP" kernel list 2>&1); rc=$?
	check "a Python whose lib/ anyone may write: the standard library planted there does not run as root" \
		test ! -e "$T/pub/ran-stdlib"
	is "$rc:$out" "69:cudanap kernel: CUDANAP_PYTHON: $T/py/bin/python$ver: its standard library's directory $T/py/lib: in $T/py/lib, which another user may write to; not run" \
		"it is refused, in one line"
	rm -f "$T/pub/ran-stdlib"
	mkdir -m 755 "$T/pub/opt" "$T/pub/opt/bin"
	cp "$sysp" "$T/pub/opt/bin/python$ver"
	plant "$T/pub"
	out=$(cd "$proj" && CUDANAP_PYTHON="$T/pub/opt/bin/python$ver" "$CUDANAP" kernel list 2>&1); rc=$?
	check "a Python without a library of its own below a sticky directory: the one planted there does not run as root" \
		test ! -e "$T/pub/ran-stdlib"
	is "$rc:$out" "69:cudanap kernel: CUDANAP_PYTHON: $T/pub/opt/bin/python$ver: it looks for its standard library in $T/pub, which another user may write to; not run" \
		"it is refused, in one line"
	rm -rf "$T/pub/ran-stdlib" "$T/pub/lib"
	# a wrapper script of root's that starts the Python of $T/py above (its lib/ anyone's): root
	# cannot see which Python a script runs, and runs none in a Python's place
	mkdir -m 755 "$T/wrap"
	printf '#!/bin/sh\nexec %s "$@"\n' "$T/py/bin/python$ver" > "$T/wrap/python3"
	chmod 755 "$T/wrap/python3"
	out=$(cd "$proj" && CUDANAP_PYTHON="$T/wrap/python3" "$CUDANAP" kernel list 2>&1); rc=$?
	check "a wrapper script of root's that starts that Python: the library planted there does not run as root" \
		test ! -e "$T/pub/ran-stdlib"
	is "$rc:$out" "69:cudanap kernel: CUDANAP_PYTHON: $T/wrap/python3: a script, not a Python: root checks the standard library of the interpreter it runs, which a script hides; name the interpreter itself; not run" \
		"it is refused, in one line"
	rm -f "$T/pub/ran-stdlib"
	# a Python of root's with its library where it must be (bin/ and lib/pythonX.Y, a link to the
	# system's, in directories only root may write), and a lib/ anyone may write in a directory
	# above it: Python looks for lib/pythonXY.zip in every directory up to "/" before its os.py,
	# so the zip the attacker puts there would be its standard library
	root_python
	if [ -n "$rootpy" ]; then
		zroot=${rootpy%/bin/*}
		mkdir -m 755 "$zroot/py" && mv "$zroot/bin" "$zroot/lib" "$zroot/py/"
		mkdir -m 777 "$zroot/lib" && chown "$A" "$zroot/lib"
		"${AS_A[@]}" python3 -c '
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("encodings/__init__.py", "import posix\nposix.close(posix.open(%r, posix.O_WRONLY | posix.O_CREAT, 0o644))\nraise SystemExit\n" % sys.argv[2])
' "$zroot/lib/python${ver/./}.zip" "$T/pub/ran-zip"
		out=$(cd "$proj" && CUDANAP_PYTHON="$zroot/py/bin/python$ver" "$CUDANAP" kernel list 2>&1); rc=$?
		check "a zip the attacker put in a lib/ of its own above the Python's prefix does not run as root" \
			test ! -e "$T/pub/ran-zip"
		is "$rc:$out" "69:cudanap kernel: CUDANAP_PYTHON: $zroot/py/bin/python$ver: its standard library's directory $zroot/lib: in $zroot/lib, which another user may write to; not run" \
			"it is refused, in one line"
	else
		skip "a zip the attacker put above a Python's prefix" "no /run of root's alone"
	fi
	# a whole Python of root's, its site directory lib/python3/dist-packages root's (Debian's
	# layout), one package directory in it anyone may write; in /run, where every directory
	# above it is root's alone (under /tmp the site directory is not taken at all)
	py2=$(mktemp -d /run/cudanap-hostile.XXXXXX 2> /dev/null)
	site=
	if [ -n "$py2" ]; then
		py2_gone() { rm -rf "$py2"; }
		at_exit py2_gone
		chmod 755 "$py2"
		mkdir -m 755 "$py2/bin" "$py2/lib"
		cp "$sysp" "$py2/bin/python$ver"
		cp -r "/usr/lib/python$ver" "$py2/lib/python$ver"
		site=$("$py2/bin/python$ver" -I -S -c 'import site; print("\n".join(site.getsitepackages()))' | grep -m1 "^$py2/lib/python3/")
	fi
	if [ -n "$site" ] && [ -z "$(find /run -maxdepth 0 -perm /022)" ]; then
		mkdir -p "$site" && mkdir -m 777 "$site/jupyter_client"
		"${AS_A[@]}" sh -c 'printf "open(\"%s/ran-site\", \"w\").write(\"planted\")\n" "$1" > "$2/jupyter_client/__init__.py"' _ "$T/pub" "$site"
		out=$(cd "$proj" && CUDANAP_PYTHON="$py2/bin/python$ver" "$CUDANAP" kernel list 2>&1); rc=$?
		check "a package directory anyone may write in a site directory of root's: nothing planted there runs as root (rc $rc)" \
			test ! -e "$T/pub/ran-site"
	else
		skip "a package directory anyone may write in a site directory" "no lib/python3 site directory, or no /run of root's alone"
	fi
else
	skip "a Python of root's whose standard library another user can write" "no /usr/bin/python3 with its library in /usr/lib"
fi

# -- 6. kernel.json with escape sequences, and one whose cudanap entry is not an object
mkdir -p "$T/jupyter/kernels/evil" "$T/jupyter/kernels/odd"
printf '{"argv": ["/bin/true\\u001b]0;owned\\u0007"], "display_name": "x", "language": "python", "metadata": {"cudanap": {"from": "a\\u001b[31mb", "nap_s": 5}}}\n' \
	> "$T/jupyter/kernels/evil/kernel.json"
printf '{"argv": ["/bin/true"], "display_name": "y", "language": "python", "metadata": {"cudanap": "str"}}\n' \
	> "$T/jupyter/kernels/odd/kernel.json"
if [ -n "$py" ]; then
	out=$("$CUDANAP" kernel list 2> "$T/klist.err"); rc=$?
	check "kernel list: no escape character reaches the terminal" test -z "$(printf %s "$out" | tr -d -c '\033\007\233')"
	like "$rc:$out" "^0:.*"$'\n'"evil +broken: /bin/true\?\]0;owned\? missing +a\?\[31mb " \
		"the hostile entry's words shown with '?' for its control characters"
	like "$out" $'\n'"odd +broken +\? " "the malformed one listed as broken, the listing goes on"
	is "$(cat "$T/klist.err")" "cudanap kernel: kernel 'odd': $T/jupyter/kernels/odd/kernel.json is not one cudanap wrote (metadata.cudanap, its nap_s or its argv malformed); listed as broken" \
		"and said in one line"
	out=$("$CUDANAP" kernel list --json 2> /dev/null)
	is "$("$py" -c 'import json, sys; print([(k["name"], k["broken"], k["wraps"]) for k in json.load(sys.stdin)["kernels"] if k["name"] in ("evil", "odd")])' <<< "$out")" \
		"[('evil', '/bin/true?]0;owned? missing', 'a?[31mb'), ('odd', 'its kernel.json is not one cudanap wrote', None)]" \
		"kernel list --json: the same words, '?' for their control characters, the malformed one broken"
	check "and no escape character in its JSON either" test -z "$(printf %s "$out" | tr -d -c '\033\007\233')"
else
	skip "kernel list of hostile kernel.json files" "no Python here imports jupyter_client"
fi

# -- 2. a link in the attacker's status directory's path, flipped between its own directory and
# the victim's while root's status and metrics look: nothing of the victim's is removed
ad=$T/pub/ad vroot=$T/pub/vroot
"${AS_A[@]}" mkdir -m 755 "$ad" "$ad/real"
"${AS_A[@]}" mkdir -m 700 "$ad/real/st"
"${AS_V[@]}" mkdir -m 711 "$vroot"
"${AS_V[@]}" mkdir -m 700 "$vroot/st"
"${AS_A[@]}" ln -s real "$ad/cur"
"${AS_A[@]}" LD_PRELOAD="$lib" CUDANAP_STATUS_DIR="$ad/cur/st" /bin/sleep 300 &
ap=$!
eventually 20 test -e "$ad/real/st/$ap.json"
sleepers=()
for i in 1 2 3 4 5; do
	"${AS_A[@]}" /bin/sleep 300 &
	sleepers+=($!)
done
for s in "${sleepers[@]}"; do
	# the victim's file and the attacker's stale one share a name: an attacker's pid
	"${AS_V[@]}" sh -c 'echo data > "$1/$2.json"' _ "$vroot/st" "$s"
	"${AS_A[@]}" sh -c 'printf "{\"pid\":%d,\"starttime\":1,\"state\":\"running\"}" "$2" > "$1/$2.json"' _ "$ad/real/st" "$s"
done
# the attacker flips the link as fast as it can, and puts back each stale file root removes
"${AS_A[@]}" python3 -c '
import os, sys
d, other, pids = sys.argv[1], sys.argv[2], sys.argv[3:]
while True:
    for t in (other, "real"):
        os.symlink(t, d + "/cur.new")
        os.rename(d + "/cur.new", d + "/cur")
    for p in pids:
        f = d + "/real/st/" + p + ".json"
        if not os.path.exists(f):
            open(f, "w").write("{\"pid\":%s,\"starttime\":1,\"state\":\"running\"}" % p)
' "$ad" "$vroot" "${sleepers[@]}" &
flipper=$!
for _ in $(seq 30); do "$CUDANAP" status --no-query > /dev/null 2>&1; done
"$CUDANAP" metrics > /dev/null 2>&1
kill "$flipper"
wait "$flipper" 2> /dev/null
left=$(ls "$vroot/st" | wc -l)
is "$left" 5 "30 root status runs and a metrics while the attacker flips a link: the victim's 5 files all there"
kill "$ap" "${sleepers[@]}"

# a stale file of the victim's own (a process gone) in a directory root visits for the victim is
# removed; one root made there is left alone (not the directory owner's)
"${AS_V[@]}" mkdir -m 700 "$T/pub/v2"
"${AS_V[@]}" LD_PRELOAD="$lib" CUDANAP_STATUS_DIR="$T/pub/v2" /bin/sleep 300 &
vp=$!
eventually 20 test -e "$T/pub/v2/$vp.json"
"${AS_V[@]}" /bin/true &
gone=$!
wait "$gone"
"${AS_V[@]}" sh -c 'printf "{\"pid\":%d,\"starttime\":5,\"state\":\"running\"}" "$2" > "$1/$2.json"' _ "$T/pub/v2" "$gone"
printf '{"pid":%d,"starttime":5,"state":"running"}' 2 > "$T/pub/v2/2.json"
"$CUDANAP" status --no-query > /dev/null 2>&1
check "root's status removes the victim's stale file of a process gone, in the victim's directory" \
	test ! -e "$T/pub/v2/$gone.json"
check "and leaves the victim's living process's file, and a stale one not the directory owner's" \
	test -e "$T/pub/v2/$vp.json" -a -e "$T/pub/v2/2.json"

# -- 3. twenty decoys with status directories of their own hide no one from root
decoys=()
for i in $(seq 20); do
	"${AS_A[@]}" mkdir -m 700 "$T/pub/dec$i"
	"${AS_A[@]}" LD_PRELOAD="$lib" CUDANAP_STATUS_DIR="$T/pub/dec$i" /bin/sleep 300 &
	decoys+=($!)
done
"${AS_V[@]}" mkdir -m 700 "$T/pub/v3"
"${AS_V[@]}" LD_PRELOAD="$lib" CUDANAP_STATUS_DIR="$T/pub/v3" /bin/sleep 300 &
vq=$!
eventually 20 test -e "$T/pub/v3/$vq.json"
eventually 20 test -e "$T/pub/dec20/${decoys[19]}.json"
table=$("$CUDANAP" status --no-query 2>&1)
like "$table" $'\n'"$vq " "root's status shows the victim's process beside 20 decoys"
like "$table" $'\n'"${decoys[0]} " "and the decoys (a decoy costs its maker a process)"
like "$("$CUDANAP" metrics 2>&1)" "pid=\"$vq\"" "root's metrics too"
"${AS_A[@]}" env CUDANAP_LIBCUDA=libcudanap.so /bin/sleep 300 &
fake=$!
eventually 20 test -e "/proc/$fake/environ"
"$CUDANAP" status --no-query --json > "$T/all.json" 2>&1
check "a process with libcudanap only in its environment is not taken for one preloaded" \
	test -z "$(grep -o "\"pid\":$fake," "$T/all.json")"
kill "${decoys[@]}" "$fake"

# -- 5. a number no status file may hold: the file is not believed, root's JSON stays JSON
for bad in nan inf 1e308 -Infinity '"nan"' '"1e999"'; do
	"${AS_V[@]}" sh -c 'printf "{\"pid\":%d,\"starttime\":%s,\"state\":\"running\",\"lock_ms\":%s}" "$1" "$2" "$4" > "$3/.x" && mv "$3/.x" "$3/$1.json"' \
		_ "$vq" "$(awk '{ print $22 }' "/proc/$vq/stat")" "$T/pub/v3" "$bad"
	json=$("$CUDANAP" status --no-query --json 2>&1)
	check "lock_ms $bad: root's status --json is valid JSON" json_ok <<< "$json"
	check "and the file is not believed" test -z "$(grep -o "\"pid\":$vq," <<< "$json")"
	check "root's metrics print no nan or inf" test -z "$("$CUDANAP" metrics 2>&1 | grep -i -E ' [-+]?(nan|inf)')"
done
"${AS_V[@]}" sh -c 'printf "{\"pid\":%d,\"starttime\":%s,\"state\":\"running\",\"gpu_now\":\"0:inf,1:nan,2:1e999\",\"command\":\"a\\\\u00ffb\377c\"}" "$1" "$2" > "$3/.x" && mv "$3/.x" "$3/$1.json"' \
	_ "$vq" "$(awk '{ print $22 }' "/proc/$vq/stat")" "$T/pub/v3"
check "a GPU list of inf and nan and a command of bytes that are not UTF-8: root's --json is valid UTF-8 JSON" \
	json_ok <<< "$("$CUDANAP" status --no-query --json 2>&1)"
check "and root's metrics print no nan or inf" test -z "$("$CUDANAP" metrics 2>&1 | grep -i -E ' [-+]?(nan|inf)')"
kill "$vp" "$vq"

# -- M. the victim's status directory, named through a link it turns toward a directory of root's
# while root's suspend waits for its (forged) busy action: root writes no note there
"${AS_V[@]}" mkdir -m 755 "$T/pub/ml" "$T/pub/ml/real"
"${AS_V[@]}" mkdir -m 700 "$T/pub/ml/real/st"
"${AS_V[@]}" ln -s real "$T/pub/ml/cur"
mkdir -m 755 "$T/pub/rootdir"
mkdir -m 700 "$T/pub/rootdir/st"
"${AS_V[@]}" LD_PRELOAD="$lib" CUDANAP_STATUS_DIR="$T/pub/ml/cur/st" /bin/sleep 300 &
vm=$!
eventually 20 test -e "$T/pub/ml/real/st/$vm.json"
"${AS_V[@]}" sh -c 'printf "{\"pid\":%d,\"starttime\":%s,\"state\":\"running\",\"busy\":true}" "$1" "$2" > "$3/.x" && mv "$3/.x" "$3/$1.json"' \
	_ "$vm" "$(awk '{ print $22 }' "/proc/$vm/stat")" "$T/pub/ml/real/st"
"$CUDANAP" suspend --timeout 6 "$vm" > "$T/m.out" 2>&1 &
act=$!
sleep 1 # root's suspend waits for the busy action: the link is turned then
"${AS_V[@]}" sh -c 'ln -sfn "$2" "$1/cur.new" && mv -T "$1/cur.new" "$1/cur"' _ "$T/pub/ml" "$T/pub/rootdir"
wait "$act"
is "$(ls -A "$T/pub/rootdir/st")" "" "root's suspend wrote nothing in root's directory the victim's link turned to ($(head -c 200 "$T/m.out"))"
kill "$vm"
finish
