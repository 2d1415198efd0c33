#!/usr/bin/env bash
# The wall time of one tuning sweep on a private local Ray head with --parallel 1 vs 2 (ratio printed), and
# the Jobs API's own per-trial overhead measured on trivial jobs (submit round trip, submitted -> RUNNING,
# RUNNING -> terminal seen, log fetch). The head: tests/tuner/data/ray_head.sh (loopback, 2 CPUs, no GPU),
# stopped at the end even on failure.
#
# usage: bench/tune/ray_parallel.sh [BUILD_DIR] [OUT_DIR]
# env:   RAY_EXE (default .venv/bin/ray, else /work/main/.venv/bin/ray), PROBES (trivial jobs, default 10)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR=$(cd "${1:-$root/build}" && pwd)
OUT_DIR=${2:-$(mktemp -d /tmp/pt-bench-ray.XXXXXX)}
mkdir -p "$OUT_DIR"
PT="$BUILD_DIR/profile-train"
[ -x "$PT" ] || { echo "no $PT (build the profile-train target first)" >&2; exit 2; }
[ -x "$BUILD_DIR/profile-train-workload" ] || { echo "no $BUILD_DIR/profile-train-workload (needs LibTorch)" >&2; exit 2; }
RAY_EXE=${RAY_EXE:-$root/.venv/bin/ray}
[ -x "$RAY_EXE" ] || RAY_EXE=/work/main/.venv/bin/ray
[ -x "$RAY_EXE" ] || { echo "no ray executable (bash .ci/setup installs ray[default])" >&2; exit 2; }
PY="$(dirname "$RAY_EXE")/python"
PROBES=${PROBES:-10}
HEAD_DIR=/tmp/ptray-bench-$$
trap '"$root/tests/tuner/data/ray_head.sh" stop "$HEAD_DIR"; rm -rf "$HEAD_DIR"' EXIT
ADDRESS=$("$root/tests/tuner/data/ray_head.sh" start "$HEAD_DIR" "$RAY_EXE" $$)

echo "machine: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "ray:     $("$RAY_EXE" --version 2>/dev/null | head -1) at $ADDRESS (local head: --num-cpus 2, no GPU)"

# 1. The Jobs API's own cost per job, on trivial entry points, one at a time.
"$PY" - "$ADDRESS" "$PROBES" > "$OUT_DIR/overhead.json" <<'PY'
import json, sys, time, urllib.request
addr, n = sys.argv[1], int(sys.argv[2])
def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(addr + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())
rows = []
for i in range(n):
    sid = f"pt-bench-probe-{i}-{int(time.time())}"
    t0 = time.monotonic()
    call("POST", "/api/jobs/", {"entrypoint": "echo probe", "submission_id": sid, "entrypoint_num_cpus": 1})
    t_sub = time.monotonic()
    t_run = None
    polls = 0
    while True:
        st = call("GET", f"/api/jobs/{sid}")["status"]
        polls += 1
        now = time.monotonic()
        if st != "PENDING" and t_run is None:
            t_run = now
        if st in ("SUCCEEDED", "FAILED", "STOPPED"):
            t_end = now
            break
        time.sleep(0.25)   # the runner's default poll interval
    t1 = time.monotonic()
    call("GET", f"/api/jobs/{sid}/logs")
    t_log = time.monotonic()
    rows.append({"submit_s": t_sub - t0, "to_running_s": t_run - t_sub, "running_to_end_s": t_end - t_run,
                 "log_fetch_s": t_log - t1, "total_s": t_log - t0, "polls": polls})
def med(k):
    v = sorted(r[k] for r in rows)
    return v[len(v) // 2]
print(json.dumps({"jobs": n, "median": {k: med(k) for k in rows[0]}, "rows": rows}, indent=1))
PY
"$PY" - "$OUT_DIR/overhead.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["median"]
print(f"Jobs API per trivial job (median of the probes): submit {m['submit_s']:.3f} s, submitted->running "
      f"{m['to_running_s']:.2f} s, running->end seen {m['running_to_end_s']:.2f} s, log fetch {m['log_fetch_s']:.3f} s, "
      f"total {m['total_s']:.2f} s")
PY

# 2. The same sweep with 1 and 2 jobs in flight.
SWEEP=(--strategy grid --knob batch_size=4,8,16,32 --repeats 2 --baseline-repeats 2 --trial-timeout 300 --quiet)
WORKLOAD=(--workload cnn --slow-preprocess-us 1000 --host-work-us 40000 --steps 6 --warmup 1 --device cpu --threads 1 --seed 0)
for p in 1 2; do
  start=$(date +%s.%N)
  "$PT" tune "${SWEEP[@]}" --executor ray --ray-address "$ADDRESS" --parallel "$p" --out "$OUT_DIR/p$p" "${WORKLOAD[@]}" \
    > "$OUT_DIR/p$p.log" 2>&1 || { echo "tune --parallel $p failed; see $OUT_DIR/p$p.log" >&2; tail -5 "$OUT_DIR/p$p.log" >&2; exit 1; }
  end=$(date +%s.%N)
  echo "$start $end" > "$OUT_DIR/p$p.seconds"
done
"$PY" - "$OUT_DIR" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(p):
    d = json.load(open(os.path.join(out, f"p{p}", "tune.json")))
    s, e = map(float, open(os.path.join(out, f"p{p}.seconds")).read().split())
    return d, e - s
for p in (1, 2):
    d, wall = load(p)
    e = d["execution"]
    o = e["overhead"]
    runs = sum(t["measurements"] for t in d["trials"])
    print(f"--parallel {p}: {len(d['trials'])} trials, {runs} jobs, wall {wall:.1f} s (tune's own {e['wall_s']:.1f} s), "
          f"sum of job times {e['sum_measurement_s']:.1f} s, saved {e['saved_s']:.1f} s; per job: submit "
          f"{o['submit_s']:.3f} s, submitted->running {o['queued_s']:.2f} s, log fetch {o['log_fetch_s']:.3f} s; "
          f"best {d['best']['config']} {d['best']['throughput']:.1f} {d['metric']['unit']}")
(d1, w1), (d2, w2) = load(1), load(2)
print(f"wall time ratio --parallel 1 / --parallel 2: {w1 / w2:.2f}")
PY
echo "out:     $OUT_DIR"
