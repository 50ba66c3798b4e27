# A Slurm cluster of two nodes on one host, for the tests of jobs across nodes: each node a network
# namespace with its own address on a bridge of the host (iproute2), its own host name (a UTS
# namespace) and its own /run (a mount namespace: $S/run is the node's own $S/nodes/NODE/run
# there, for the plugin's statusbase and the fake driver's state, the node's GPUs), running its
# own slurmd; slurmctld and munged run on the host, which plays the cluster's controller. The rest
# of $T, the fake NCCL's state among it (the network between the ranks), is the directory both
# nodes share, as a cluster's shared filesystem. Both nodes see every process of
# the host (no pid namespace): nothing of cudanap relies on it, a rank on another node is known by
# its node and pid. Sourced after lib.sh and cluster.sh; the cluster's own lock, bridge, subnet and
# ports, so that it runs beside the one-node cluster of cluster.sh.
command -v ip > /dev/null || skip_all "ip not found (Debian: iproute2)"
command -v nsenter > /dev/null && command -v unshare > /dev/null || skip_all "nsenter or unshare not found (util-linux)"

NODES=(cnode1 cnode2)
NET=10.213.77 # the bridge's .1 (the controller), the nodes' .11, .12
BRIDGE=cnbr77
declare -A node_pid=() # each node's slurmd, whose namespaces are the node's

net_down() {
	local i
	for i in "${!NODES[@]}"; do
		ip netns del "cudanap-${NODES[i]}" 2> /dev/null
		ip link del "cnv77$i" 2> /dev/null
	done
	ip link del "$BRIDGE" 2> /dev/null
	return 0
}

# net_up: the bridge, and each node's namespace on it; 1 when the host does not let us.
net_up() {
	local i n
	net_down # what a run killed before its end left
	ip link add "$BRIDGE" type bridge 2> /dev/null && ip addr add "$NET.1/24" dev "$BRIDGE" &&
		ip link set "$BRIDGE" up || return 1
	for i in "${!NODES[@]}"; do
		n=${NODES[i]}
		ip netns add "cudanap-$n" && ip link add "cnv77$i" type veth peer name eth0 netns "cudanap-$n" &&
			ip link set "cnv77$i" master "$BRIDGE" up &&
			ip -n "cudanap-$n" addr add "$NET.1$((i + 1))/24" dev eth0 &&
			ip -n "cudanap-$n" link set eth0 up && ip -n "cudanap-$n" link set lo up || return 1
	done
}

# node_slurmd NODE: NODE's slurmd started in its namespaces, its host name and /etc/hosts its own.
node_slurmd() {
	mkdir -p "$S/d/$1" "$S/nodes/$1/run/fake" "$S/run"
	chmod 755 "$S/nodes/$1/run"
	nsenter --net="/run/netns/cudanap-$1" unshare --uts --mount --propagation private \
		bash -c 'hostname "$1" && mount --bind "$2/hosts" /etc/hosts && mount --bind "$2/nodes/$1/run" "$2/run" &&
			exec slurmd -D -N "$1"' node "$1" "$S" > "$S/log/slurmd.$1.out" 2>&1 &
	node_pid[$1]=$!
	cluster_pids+=($!)
}

# nodes_start PLUGSTACK_LINE [SLURM.CONF LINE...]: the two-node cluster up, both nodes idle (as
# cluster_start, whose slurm_conf says what the lines do).
nodes_start() {
	local plug=$1 n lines= i
	shift
	cluster_lock cudanap-test-nodes.lock
	net_up || { net_down; skip_all "cannot make network namespaces and a bridge here (ip netns add, ip link add type bridge)"; }
	at_exit net_down
	munge_start
	{
		printf '127.0.0.1 localhost\n%s.1 %s\n' "$NET" "$NODE"
		for i in "${!NODES[@]}"; do printf '%s.1%d %s\n' "$NET" $((i + 1)) "${NODES[i]}"; done
	} > "$S/hosts"
	for i in "${!NODES[@]}"; do
		lines+="NodeName=${NODES[i]} NodeAddr=$NET.1$((i + 1)) CPUs=$(nproc) State=UNKNOWN"$'\n'
	done
	per_node=1 slurm_conf "$plug" "$NET.1" "$lines" "$@"
	cgroup_slices
	ctld_start
	for n in "${NODES[@]}"; do node_slurmd "$n"; done
	for _ in $(seq 300); do
		[ "$(sinfo -h -o %T 2> /dev/null | sort -u)" = idle ] && [ "$(sinfo -h -o %D)" = 2 ] && return 0
		for n in "${NODES[@]}"; do kill -0 "${node_pid[$n]}" 2> /dev/null || daemon_failed "slurmd.$n" "$S/log/slurmd.$n.out"; done
		sleep 0.1
	done
	daemon_failed slurmd "$S/log/slurmd.${NODES[0]}.out"
}

# on_node NODE COMMAND...: COMMAND run on NODE, in its namespaces (as a shell there would).
on_node() {
	local n=$1
	shift
	nsenter --target "${node_pid[$n]}" --net --uts --mount -- "$@"
}
# node_bg NODE COMMAND... &: the same in the background, $! its pid (the function execs it)
node_bg() {
	local n=$1
	shift
	exec nsenter --target "${node_pid[$n]}" --net --uts --mount -- "$@"
}
# node_dir NODE J: job J's status directory on NODE (the plugin's statusbase=$S/run); node_fake
# NODE: the fake driver's directory there ($CUDANAP_FAKE_DIR=$S/run/fake in a task).
node_dir() { echo "$S/nodes/$1/run/cudanap/job$2"; }
node_fake() { echo "$S/nodes/$1/run/fake"; }
