#!/usr/bin/env bash
# The Grafana dashboard in docs/: JSON Grafana can import (a Prometheus data source to pick, panels
# with queries), with a node variable that every query follows, the panels operators ask for (per
# user, Slurm job, GPU and process), whose queries name only metrics that cudanap metrics exports
# (a histogram's by its _bucket, _sum or _count series). prometheus.sh runs its queries against a
# real Prometheus.
. "$(dirname "$0")/../lib.sh"
command -v python3 > /dev/null || skip_all "no python3 to read the dashboard's JSON"
dash=$(dirname "$0")/../../docs/grafana-dashboard.json
write_ini
# Every family cudanap metrics exports, and its type: printed whether or not a process runs.
exported=$("$CUDANAP" metrics -c "$T/job.ini" | sed -n 's/^# TYPE \([^ ]*\) \([a-z]*\)$/\1 \2/p')
like "$exported" "cudanap_wake_seconds histogram" "cudanap metrics says its families and their types"

# dashboard.py DASHBOARD EXPORTED: one line per finding, "key value".
out=$(python3 - "$dash" "$exported" << 'PY' 2>&1
import json, re, sys

try:
    d = json.load(open(sys.argv[1]))
except ValueError as e:
    print("parse", e)
    sys.exit(0)
print("parse ok")
types = dict(line.split() for line in sys.argv[2].splitlines())
names = set(types)
for n, t in types.items():
    if t == "histogram":
        names |= {n + "_bucket", n + "_sum", n + "_count"}
print("import", "ok" if any(i.get("pluginId") == "prometheus" for i in d.get("__inputs", [])) else "no data source input")
panels = d.get("panels", [])
exprs = [t["expr"] for p in panels for t in p.get("targets", [])]
exprs += [v["definition"] for v in d.get("templating", {}).get("list", [])]
print("queries", len(exprs), "in", len(panels), "panels")
print("titles", "|".join(p["title"] for p in panels))
variables = d.get("templating", {}).get("list", [])
print("variables", " ".join(v["name"] for v in variables))
print("unfiltered", len([e for p in panels for t in p.get("targets", []) for e in [t["expr"]]
                         if 'instance=~"$instance"' not in e]))
print("per-gpu", len([p for p in panels if any("by (instance, gpu)" in t["expr"] for t in p["targets"])]))
print("per-process", len([p for p in panels if any(re.search(r"by \(instance, pid\b", t["expr"]) or
                                                    t["expr"].startswith("cudanap_idle_seconds{")
                                                    for t in p["targets"])]))
words = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
         "offset", "sum", "min", "max", "avg", "count", "topk", "bottomk", "quantile", "rate", "irate",
         "increase", "delta", "histogram_quantile", "label_values", "clamp_min", "clamp_max"}
unknown = set()
for e in exprs:
    s = re.sub(r'"[^"]*"', "", e)                     # strings
    s = re.sub(r"\{[^}]*\}", "", s)                   # label matchers
    s = re.sub(r"\b(by|without)\s*\([^)]*\)", "", s)  # groupings
    s = re.sub(r"\[[^\]]*\]", "", s)                  # ranges
    s = re.sub(r"label_values\(\s*([a-z_:]+)\s*,\s*[a-z_]+\s*\)", r"\1", s)  # Grafana's
    for w in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", s):
        if w not in words and w not in names:
            unknown.add(w)
print("unknown", " ".join(sorted(unknown)) or "none")
used = set(re.findall(r"cudanap_[a-z_]+", " ".join(exprs)))
print("used", " ".join(sorted(used)))
PY
)
is "$(sed -n 's/^parse //p' <<< "$out")" ok "docs/grafana-dashboard.json parses"
is "$(sed -n 's/^import //p' <<< "$out")" ok "a Prometheus data source for Grafana's import to ask for"
like "$(sed -n 's/^queries //p' <<< "$out")" "^[0-9]+ in [0-9]+ panels$" "panels with queries"
is "$(sed -n 's/^unknown //p' <<< "$out")" none "its queries name only metrics cudanap exports"
is "$(sed -n 's/^variables //p' <<< "$out")" "instance user job" "variables: the node (instance) first, then the user and the Slurm job"
is "$(sed -n 's/^unfiltered //p' <<< "$out")" 0 "every query follows the node variable"
check "panels per GPU ($(sed -n 's/^per-gpu //p' <<< "$out"))" test "$(sed -n 's/^per-gpu //p' <<< "$out")" -ge 2
check "and per process ($(sed -n 's/^per-process //p' <<< "$out"))" test "$(sed -n 's/^per-process //p' <<< "$out")" -ge 3
titles=$(sed -n 's/^titles //p' <<< "$out")
for want in "GPU memory given back, by user" "GPU memory given back, by Slurm job" "Naps and wakes" "Wake time" \
	"GPU memory by GPU: held and given back" "Processes by GPU" "GPU memory by process" "Host copies by process" \
	"Idle time by process" "Processes" "GPU models and cudanap versions, by node"; do
	check "a panel: $want" grep -qF "$want" <<< "$titles"
done
used=$(sed -n 's/^used //p' <<< "$out")
for m in cudanap_gpu_memory_bytes cudanap_released_byte_seconds_total cudanap_actions_total cudanap_wake_seconds_bucket \
	cudanap_copy_bytes cudanap_idle_seconds cudanap_gpu_model_info cudanap_build_info; do
	check "it reads $m" grep -qw "$m" <<< "$used"
done
finish
