#!/usr/bin/env bash
# Names say where they live: every function a file of cudanap's programs defines for other files
# has the file's name as its prefix (cn_FILE_... in the libraries and the controller, FILE_... in
# the command line), and the preload defines no other global function than what it interposes,
# each named in its version script. Read off the compiled objects (nm), so a name no grep sees
# (made by a macro, written in assembly) counts too.
#
# names.sh PREFIX OBJDIR SRCDIR SOURCE... [-- PREFIX OBJDIR SRCDIR SOURCE...]...: PREFIX is "cn_"
# or "" (the command line); the object of SRCDIR/a/b.c is OBJDIR/a_b.c.o, as meson names it.
. "$(dirname "$0")/../lib.sh"
command -v nm > /dev/null || skip_all "no nm"

# The names the preload interposes: its version script's globals (cu[A-Z]* a pattern).
map=$(dirname "$0")/../../preload/cudanap.map
mapfile -t globs < <(awk '/global:/ { on = 1; next } /local:/ { on = 0 } on { gsub(/[ \t;]/, ""); if ($0 != "") print }' "$map")
[ ${#globs[@]} -gt 10 ] || skip_all "cannot read the version script $map"
exported() {
	local pat
	for pat in "${globs[@]}"; do
		# shellcheck disable=SC2053
		[[ $1 == $pat ]] && return 0
	done
	return 1
}

check_group() { # PREFIX OBJDIR SRCDIR SOURCE...
	local prefix=$1 objdir=$2 srcdir src rel obj base sym bad
	srcdir=$(realpath -m "$3")
	shift 3
	for src in "$@"; do
		src=$(realpath -m "$src")
		[[ $src == *.c || $src == *.S ]] || continue
		rel=${src#"$srcdir"/}
		obj=$objdir/${rel//\//_}.o
		base=$(basename "$src"); base=${base%.*}
		if [ ! -f "$obj" ]; then
			ok 1 "$rel: its object $obj"
			continue
		fi
		bad=
		while read -r sym; do
			case $sym in
			"$prefix$base" | "$prefix${base}_"* | main) ;;
			slurm_spank_*) [ "$base" = spank_cudanap ] || bad+=" $sym" ;;
			*) exported "$sym" || bad+=" $sym" ;;
			esac
		done < <(nm -g --defined-only "$obj" | awk '$2 == "T" { print $3 }')
		is "${bad# }" "" "$rel: its functions are $prefix${base}_*"
	done
}

args=("$@")
i=0
while [ $i -lt ${#args[@]} ]; do
	grp=()
	while [ $i -lt ${#args[@]} ] && [ "${args[$i]}" != -- ]; do grp+=("${args[$i]}"); i=$((i + 1)); done
	i=$((i + 1))
	check_group "${grp[@]}"
done
finish
