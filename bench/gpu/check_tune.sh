#!/usr/bin/env bash
# GPU check for `profile-train tune`: a batch x AMP grid on the built-in `cnn` workload (64x64 images, as in
# the GPU scenarios), then the guided search over the default knobs, on one CUDA device. Results (tune.json /
# tune.html / logs / summary.txt) go under $OUT (default: ./out/check_tune). Every sweep has a time budget:
# PT_TUNE_BUDGET_S seconds in all (default 180), split 55/45 between the grid and the guided search.
# PT_GPU_DRY_RUN=1: the same sweeps, small, on the CPU (a machine without a GPU).
#
# usage: OUT=/path bench/gpu/check_tune.sh [BUILD_DIR]
set -uo pipefail
BUILD_DIR=${1:-build}
OUT=${OUT:-out/check_tune}
PT="$BUILD_DIR/profile-train"
budget=${PT_TUNE_BUDGET_S:-180}
mkdir -p "$OUT"
exec > >(tee "$OUT/check_tune.log") 2>&1
[ -x "$PT" ] || { echo "SKIP: no $PT"; exit 2; }
[ -x "$BUILD_DIR/profile-train-workload" ] || { echo "SKIP: no profile-train-workload (LibTorch)"; exit 2; }
date -u +%Y-%m-%dT%H:%M:%SZ
if [ -n "${PT_GPU_DRY_RUN:-}" ]; then
  echo "DRY RUN: no GPU; small sweeps on the CPU"
  WL=(--workload mlp --device cpu --steps 6 --warmup 2 --seed 0 --threads 1)
  GRID=(--knob batch_size=16,32 --knob amp=off,bf16)
else
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "nvidia-smi unavailable"
  WL=(--workload cnn --device cuda --image-size 64 --width 64 --workers 4 --steps 20 --warmup 5 --seed 0)
  GRID=(--knob batch_size=64,256 --knob amp=off,bf16)
fi
grid_s=$(( budget * 55 / 100 ))
guided_s=$(( budget - grid_s ))
rc=0

echo "== grid: ${GRID[*]} (budget ${grid_s}s) =="
"$PT" tune --strategy grid "${GRID[@]}" --repeats 1 --baseline-repeats 2 --trial-timeout 90 \
  --time-budget "$grid_s" --out "$OUT/grid" "${WL[@]}" || rc=$?

echo "== guided: default knobs (batch_size auto, num_workers, pin_memory, amp) (budget ${guided_s}s) =="
"$PT" tune --strategy guided --repeats 2 --baseline-repeats 2 --trial-timeout 90 --time-budget "$guided_s" \
  --out "$OUT/guided" "${WL[@]}" || rc=$?

python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]
for name in ("grid", "guided"):
    p = os.path.join(out, name, "tune.json")
    if not os.path.exists(p):
        print(f"{name}: no tune.json"); continue
    d = json.load(open(p))
    print(f"{name}: {d['status']['trials']} trials, {d['status']['stop_reason']}, oom trials {d['status']['oom_trials']}")
    for t in d["trials"]:
        tp = f"{t['throughput']:.1f}" if t["throughput"] else "-"
        print(f"  #{t['index']:>2} {t['config']} {t['status']:>10} {tp} {d['metric']['unit']}")
    if d.get("best"):
        s = d["speedup"]
        iv = f"95% interval {s['low']:.2f}-{s['high']:.2f}" if s.get("low") is not None else s.get("interval", "?")
        claim = "confirmed" if s.get("claimed") else "not claimed"
        print(f"  best {d['best']['config']}: x{s['value']:.2f} ({iv}; {claim}) vs baseline; change: {d['change']['summary']}")
PY
exit $rc
