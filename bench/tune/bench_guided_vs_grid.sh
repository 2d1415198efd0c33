#!/usr/bin/env bash
# Guided vs grid on the CPU with the input-bound built-in workload (issue 7's acceptance check).
#   grid  : batch_size {16,32,64,128} x num_workers {0,1,2} x amp {off,bf16}  (24 trials)
#   guided: the same space, diagnosis-guided
# Prints both best throughputs, the trial counts and the ratios, then re-measures both chosen configs
# head-to-head (interleaved) to remove the grid's winner's-curse bias. Needs `profile-train run` and
# profile-train-workload (LibTorch) in BUILD_DIR.
#
# usage: bench/tune/bench_guided_vs_grid.sh [BUILD_DIR] [OUT_DIR]
# env:   WORKLOAD_BIN (default BUILD_DIR/profile-train-workload), SLOW_US (per-sample preprocessing, default 4000), STEPS (6), WARMUP (1), REPEATS (2), THREADS (1), HEAD2HEAD (4)
set -euo pipefail
BUILD_DIR=${1:-build}
OUT_DIR=${2:-$(mktemp -d /tmp/pt-bench-tune.XXXXXX)}
mkdir -p "$OUT_DIR"
PT="$BUILD_DIR/profile-train"
[ -x "$PT" ] || { echo "no $PT (build the profile-train target first)" >&2; exit 2; }
WORKLOAD_BIN=${WORKLOAD_BIN:-$BUILD_DIR/profile-train-workload}
[ -x "$WORKLOAD_BIN" ] || { echo "no $WORKLOAD_BIN (needs LibTorch; or set WORKLOAD_BIN)" >&2; exit 2; }

SLOW_US=${SLOW_US:-4000}
STEPS=${STEPS:-6}
WARMUP=${WARMUP:-1}
REPEATS=${REPEATS:-2}
THREADS=${THREADS:-1}
KNOBS=(--knob batch_size=16,32,64,128 --knob num_workers=0,1,2 --knob amp=off,bf16)
COMMON=(--repeats "$REPEATS" --baseline-repeats 3 --trial-timeout 300 --quiet --workload-binary "$WORKLOAD_BIN")
WORKLOAD=(--workload cnn --slow-preprocess-us "$SLOW_US" --steps "$STEPS" --warmup "$WARMUP" --device cpu
          --threads "$THREADS" --seed 0)

run_strategy() {
  local strategy=$1
  local start end
  start=$(date +%s)
  "$PT" tune --strategy "$strategy" "${KNOBS[@]}" "${COMMON[@]}" --out "$OUT_DIR/$strategy" "${WORKLOAD[@]}" \
    > "$OUT_DIR/$strategy.log" 2>&1 || { echo "tune --strategy $strategy failed; see $OUT_DIR/$strategy.log" >&2; tail -5 "$OUT_DIR/$strategy.log" >&2; exit 1; }
  end=$(date +%s)
  echo $((end - start)) > "$OUT_DIR/$strategy.seconds"
}

echo "machine: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "workload: ${WORKLOAD[*]}"
echo "out:     $OUT_DIR"
run_strategy grid
run_strategy guided

python3 - "$OUT_DIR" <<'PY'
import json, sys, os
out = sys.argv[1]
def load(name):
    with open(os.path.join(out, name, "tune.json")) as f:
        return json.load(f)
grid, guided = load("grid"), load("guided")
def runs(d): return sum(t["measurements"] for t in d["trials"])
def secs(name): return int(open(os.path.join(out, name + ".seconds")).read())
gb, ub = grid["best"], guided["best"]
unit = grid["metric"]["unit"]
print(f"grid  : best {gb['throughput']:.1f} {unit} at {gb['config']}  trials {len(grid['trials'])}  runs {runs(grid)}  {secs('grid')} s")
print(f"guided: best {ub['throughput']:.1f} {unit} at {ub['config']}  trials {len(guided['trials'])}  runs {runs(guided)}  {secs('guided')} s")
print(f"guided/grid best throughput (each as measured by its own sweep): {ub['throughput'] / gb['throughput']:.3f}")
# The same comparison from one set of measurements: the grid's figure for guided's chosen configuration.
same = [t for t in grid["trials"] if t["config"] == ub["config"] and t["throughput"]]
if same:
    print(f"guided's config as measured by the grid / grid best: {same[0]['throughput'] / gb['throughput']:.3f}")
print(f"trials guided/grid: {len(guided['trials'])}/{len(grid['trials'])} = {len(guided['trials']) / len(grid['trials']):.3f}")
print(f"measured noise (pooled relative sd): grid {100 * grid['noise']['pooled_relative_sd']:.1f}%  guided {100 * guided['noise']['pooled_relative_sd']:.1f}%")
sp = guided['speedup']
iv = f"95% interval {sp['low']:.2f}-{sp['high']:.2f}" if sp.get('low') is not None else sp.get('interval', '')
print(f"guided speedup over its baseline: x{sp['value']:.2f} ({iv}, {'confirmed' if sp.get('claimed') else 'not claimed'} head to head); change: {guided['change']['summary']}")
json.dump({"grid_best": gb["config"], "guided_best": ub["config"], "grid_trials": len(grid["trials"]),
           "guided_trials": len(guided["trials"]), "sweep_ratio": ub["throughput"] / gb["throughput"]},
          open(os.path.join(out, "summary.json"), "w"))
PY

# Head-to-head: the best of a noisy grid is biased upwards (the maximum of 24 noisy figures), so both chosen
# configurations are measured again, interleaved, HEAD2HEAD times each, through `profile-train run`.
HEAD2HEAD=${HEAD2HEAD:-4}
python3 - "$OUT_DIR" > "$OUT_DIR/head2head.args" <<'PY'
import json, os, sys
s = json.load(open(os.path.join(sys.argv[1], "summary.json")))
flag = {"batch_size": "--batch-size", "num_workers": "--workers", "amp": "--amp"}
for name in ("grid_best", "guided_best"):
    print(name, " ".join(f"{flag[k]} {v}" for k, v in sorted(s[name].items())))
PY
mkdir -p "$OUT_DIR/head2head"
for r in $(seq 1 "$HEAD2HEAD"); do
  while read -r name flags; do
    d="$OUT_DIR/head2head/$name-$r"
    # shellcheck disable=SC2086
    "$PT" run --out "$d" -- "$WORKLOAD_BIN" --model cnn "${WORKLOAD[@]:2}" $flags > "$d.log" 2>&1 || true
  done < "$OUT_DIR/head2head.args"
done
python3 - "$OUT_DIR" "$HEAD2HEAD" <<'PY'
import json, os, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
s = json.load(open(os.path.join(out, "summary.json")))
res = {}
for name in ("grid_best", "guided_best"):
    batch = int(s[name]["batch_size"])
    vals = []
    for r in range(1, n + 1):
        p = os.path.join(out, "head2head", f"{name}-{r}", "report.json")
        try:
            vals.append(batch * 1000.0 / json.load(open(p))["steps"]["mean_ms"])
        except Exception:
            pass
    res[name] = vals
    if vals:
        sd = statistics.stdev(vals) if len(vals) > 1 else float("nan")
        print(f"head-to-head {name:11s} {s[name]}: {statistics.mean(vals):.1f} samples/s ± {sd:.1f} over {len(vals)} runs")
if res["grid_best"] and res["guided_best"]:
    ratio = statistics.mean(res["guided_best"]) / statistics.mean(res["grid_best"])
    print(f"head-to-head guided/grid: {ratio:.3f}")
    ok = ratio >= 0.95 and 3 * s["guided_trials"] <= s["grid_trials"]
    print("PASS" if ok else "FAIL", "(target: guided >= 95% of grid best with <= 1/3 of its trials, head-to-head)")
PY
