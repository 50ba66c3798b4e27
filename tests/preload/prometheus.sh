#!/usr/bin/env bash
# cudanap metrics scraped by a real Prometheus, with the fake driver: Debian's prometheus and
# prometheus-node-exporter started here on loopback ports as this test's own processes (stopped by
# their PIDs at the end), node_exporter's textfile collector reading the directory `cudanap metrics
# --textfile` writes, and `cudanap metrics --listen` serving them itself, the server scraping both
# every second; the series and their labels asked of the server's HTTP API, as an operator's
# queries and the Grafana dashboard's would ask them, its node variable, per-GPU and per-process
# panels among them.
. "$(dirname "$0")/../lib.sh"
for b in prometheus prometheus-node-exporter curl python3; do
	command -v "$b" > /dev/null ||
		skip_all "$b not found (Debian: prometheus prometheus-node-exporter curl python3)"
done
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake" "$T/tf"
write_ini

# -- two processes: A suspended, B napping after a nap and a wake
start A "$TARGET"
start B "$TARGET"
"$CUDANAP" status -c "$T/job.ini" > /dev/null
"$CUDANAP" suspend -c "$T/job.ini" "$A_pid" > /dev/null
"$CUDANAP" nap -c "$T/job.ini" "$B_pid" > /dev/null
ask B "drv launch export 5"
woke "$B_pid"
"$CUDANAP" nap -c "$T/job.ini" "$B_pid" > /dev/null
"$CUDANAP" metrics -c "$T/job.ini" --textfile "$T/tf"
is "$?" 0 "cudanap metrics --textfile wrote $T/tf/cudanap.prom"

# -- node_exporter (the textfile collector alone) and Prometheus scraping it every second
ne_port=$(free_port)
prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$T/tf" > "$T/ne.log" 2>&1 &
ne_pid=$!
cn_port=$(free_port)
"$CUDANAP" metrics -c "$T/job.ini" --listen "127.0.0.1:$cn_port" > /dev/null 2> "$T/listen.log" &
cn_pid=$!
prom_port=$(free_port)
cat > "$T/prometheus.yml" << EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$ne_port']
  - job_name: cudanap
    static_configs:
      - targets: ['127.0.0.1:$cn_port']
EOF
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address="127.0.0.1:$prom_port" > "$T/prom.log" 2>&1 &
prom_pid=$!
api=http://127.0.0.1:$prom_port/api/v1
# query EXPR: the answer's series, one line each: the labels but __name__, job and instance (the
# scrape's), sorted, as k="v" pairs joined by commas, a space and the value; "error: ..." when the
# server says so
query() {
	curl -sf --max-time 5 --get --data-urlencode "query=$1" "$api/query" | python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)
except ValueError:
    print("error: no answer"); sys.exit()
if r.get("status") != "success":
    print("error:", r.get("error")); sys.exit()
for s in r["data"]["result"]:
    m = s["metric"]
    keep = sorted((k, v) for k, v in m.items() if k not in ("__name__", "instance") and
                  not (k == "job" and v == "node"))
    print(",".join("%s=\"%s\"" % kv for kv in keep), s["value"][1])' | sort
}
scraped() { [ "$(query 'count(cudanap_process_state{job="node"})')" = " 2" ] &&
	[ "$(query 'count(cudanap_process_state{job="cudanap"})')" = " 2" ]; }
if ! eventually 60 scraped; then
	diag "node_exporter: $(tail -n 3 "$T/ne.log")"
	diag "prometheus: $(tail -n 3 "$T/prom.log")"
	diag "cudanap metrics --listen: $(tail -n 3 "$T/listen.log")"
fi
is "$(query 'count(cudanap_process_state{job="node"})')" " 2" "Prometheus scraped both processes through node_exporter"
is "$(query 'count(cudanap_process_state{job="cudanap"})')" " 2" "and from cudanap metrics --listen"
like "$(query 'cudanap_build_info{job="cudanap"}')" '^job="cudanap",version="[^"]+" 1$' "cudanap_build_info: the version, once per scrape"

user=$(id -un)
is "$(query "cudanap_process_state{job=\"node\",pid=\"$A_pid\"}")" \
	"command=\"fake_target\",pid=\"$A_pid\",state=\"checkpointed\",user=\"$user\" 1" \
	"A: its labels as cudanap wrote them, state checkpointed"
like "$(query "cudanap_process_state{job=\"node\",pid=\"$B_pid\"}")" "pid=\"$B_pid\",state=\"napping\",user=\"$user\" 1$" \
	"B: state napping, a word of its own"
is "$(query "cudanap_gpu_memory_bytes{job=\"node\",pid=\"$A_pid\"}")" \
	"UUID=\"GPU-face0000-0000-0000-0000-000000000000\",command=\"fake_target\",gpu=\"0\",pid=\"$A_pid\",state=\"released\",user=\"$user\" 1048576000" \
	"A's GPU memory given back, with gpu and UUID"
is "$(query "sum by (user) (cudanap_gpu_memory_bytes{job=\"node\",state=\"released\"})")" "user=\"$user\" 2097152000" \
	"given back, by user: what the dashboard's first panel asks"
is "$(query "cudanap_actions_total{job=\"node\",pid=\"$B_pid\",result=\"ok\"}" | sed 's/.*action="\([a-z]*\)".* /\1=/' | xargs)" \
	"nap=2 resume=0 suspend=0 wake=1" "B's actions by result: two naps, a wake"
is "$(query "cudanap_wake_seconds_count{job=\"node\",pid=\"$B_pid\"}" | sed 's/.* //')" 1 "a histogram: B's wake counted"
like "$(query "histogram_quantile(0.9, sum by (le) (cudanap_wake_seconds_bucket{job=\"node\",pid=\"$B_pid\"}))")" \
	"^ [0-9.e+-]+$" "and Prometheus takes its buckets for one: the wake time's 90th percentile"
is "$(query "count(cudanap_suspend_seconds_bucket{job=\"node\",pid=\"$B_pid\"})")" " 12" "suspend seconds: 12 buckets, +Inf included"

# -- every query of the Grafana dashboard, its variables given: Prometheus takes each, and the
# per-GPU and per-process panels answer with the two processes' series, on each node
dash=$(dirname "$0")/../../docs/grafana-dashboard.json
bad=0 n=0 answered=
while IFS=$'\t' read -r title q; do
	n=$((n + 1))
	out=$(query "$q")
	[[ $out == error:* ]] && { diag "$q: $out"; bad=$((bad + 1)); }
	[ -z "$out" ] || answered+="|$title|"
done < <(python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["panels"]:
    for t in p["targets"]:
        e = t["expr"]
        for k, v in (("$__rate_interval", "1m"), ("$__range", "5m"), ("$instance", ".*"),
                     ("$user", ".*"), ("$job", ".*")):
            e = e.replace(k, v)
        print(p["title"] + "\t" + e)' "$dash")
check "the dashboard's $n queries: Prometheus takes each ($bad refused)" test "$n" -gt 0 -a "$bad" = 0
empty=
for title in "GPU memory by GPU: held and given back" "Processes by GPU" "GPU memory by process" \
	"Host copies by process" "Processes" "GPU models and cudanap versions, by node"; do
	[[ $answered == *"|$title|"* ]] || empty+="$title; "
done
is "$empty" "" "its per-GPU and per-process panels have the processes' series"
node=127.0.0.1:$ne_port
is "$(query "sum by (gpu) (cudanap_gpu_memory_bytes{instance=\"$node\",state=\"released\"})")" 'gpu="0" 2097152000' \
	"the node variable picks one node: GPU 0's memory given back there"
is "$(query "label_replace(count by (instance) (cudanap_build_info), \"x\", \"\", \"\", \"\")" | wc -l)" 2 \
	"the node variable's values: one per place scraped (node_exporter, cudanap --listen)"

kill "$prom_pid" "$ne_pid" "$cn_pid"
wait "$prom_pid" "$ne_pid" "$cn_pid"
ask A quit
ask B quit
finish
