#!/usr/bin/env bash
# Guided vs grid on the CPU with the input-bound built-in workload (issue 7's acceptance check).
#   grid  : batch_size {16,32,64,128} x num_workers {0,1,2} x amp {off,bf16}  (24 trials)
#   guided: the same space, diagnosis-guided
# Prints both best throughputs, the trial counts and the ratios. Needs `profile-train run` and
# profile-train-workload (LibTorch) in BUILD_DIR.
#
# usage: bench/tune/bench_guided_vs_grid.sh [BUILD_DIR] [OUT_DIR]
# env:   WORKLOAD_BIN (default BUILD_DIR/profile-train-workload), SLOW_US (per-sample preprocessing, default 4000), STEPS (6), WARMUP (1), REPEATS (2), THREADS (1)
set -euo pipefail
BUILD_DIR=${1:-build}
OUT_DIR=${2:-$(mktemp -d /tmp/pt-bench-tune.XXXXXX)}
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
sg = guided['speedup']['sigma']
print(f"guided speedup over its baseline: x{guided['speedup']['value']:.2f} ± {sg if sg is None else round(sg, 2)} (1 sigma); change: {guided['change']['summary']}")
ok = ub["throughput"] >= 0.95 * gb["throughput"] and 3 * len(guided["trials"]) <= len(grid["trials"])
print("PASS" if ok else "FAIL", "(target: guided >= 95% of grid best with <= 1/3 of its trials)")
PY
