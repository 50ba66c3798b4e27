#!/usr/bin/env bash
# The preload's folders are layers: a file includes headers of its own folder, of base/ and of the
# folders below it, each preload header named with its folder ("agent/state.h"), so that an arrow
# back up fails here. agent/ (the agent thread) may use hostcopy/, nccl/, cuda/ and the wake pipe
# (wake.h, shared by its writers and its reader); nccl/ may use cuda/; cuda/ and hostcopy/ none of
# the others. Inside agent/, the loop (agent.c) stands on the actions and the actions on the
# services: no action includes another action's header, no service an action's or the loop's.
. "$(dirname "$0")/../lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/preload
below() {
	case $1 in
	agent) echo "agent hostcopy nccl cuda wake.h" ;;
	nccl) echo "nccl cuda" ;;
	*) echo "$1" ;;
	esac
}
# includes FILE: its quoted includes, one a line
includes() { sed -n 's/^#include "\([^"]*\)".*/\1/p' "$1"; }

for d in agent cuda hostcopy nccl; do
	bad=
	for f in "$src/$d"/*.[chS]; do
		while read -r inc; do
			case $inc in
			*/*) what=${inc%%/*} ;;
			*) [ -e "$src/$inc" ] && what=$inc || continue ;; # base's and the system's
			esac
			[[ " $(below "$d") " == *" $what "* ]] || bad+=" ${f#"$src"/}: $inc;"
		done < <(includes "$f")
	done
	is "${bad:-none}" none "$d/ includes only its own headers and those below it"
done

# agent/'s own layers: the actions, side by side; every other file but the loop is a service
actions=" suspend resume nap query prepare pager "
bad=
for f in "$src"/agent/*.[ch]; do
	me=$(basename "${f%.*}")
	[ "$me" = agent ] && continue
	while read -r inc; do
		[[ $inc == agent/* ]] || continue
		to=$(basename "${inc%.h}")
		[ "$to" = "$me" ] && continue
		if [ "$to" = agent ] || [[ $actions == *" $to "* ]]; then
			bad+=" ${f#"$src"/}: $inc;"
		fi
	done < <(includes "$f")
done
is "${bad:-none}" none "agent/: no action includes another action, no service an action or the loop"

unnamed=
while read -r f; do
	while read -r inc; do
		[[ $inc == */* ]] && continue
		for d in agent cuda hostcopy nccl; do
			[ ! -e "$src/$d/$inc" ] || unnamed+=" ${f#"$root"/}: $inc;"
		done
	done < <(includes "$f")
done < <(find "$root/preload" "$root/tests" "$root/tools" "$root/ctl" -name '*.[chS]')
is "${unnamed:-none}" none "every preload header is named with its folder"
finish
