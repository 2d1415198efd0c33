#!/usr/bin/env bash
# GPU check for `profile-train tune`: a batch x AMP grid on the built-in `cnn` workload, then the guided
# search over the default knobs, on one CUDA device. Results (tune.json / tune.html / logs / a summary) go
# under $OUT (default: ./out/check_tune). Sized to ~6 minutes of device time; every sweep has a time budget.
#
# usage: OUT=/path bench/gpu/check_tune.sh [BUILD_DIR]
set -uo pipefail
BUILD_DIR=${1:-build}
OUT=${OUT:-out/check_tune}
PT="$BUILD_DIR/profile-train"
mkdir -p "$OUT"
exec > >(tee "$OUT/check_tune.log") 2>&1
[ -x "$PT" ] || { echo "SKIP: no $PT"; exit 2; }
[ -x "$BUILD_DIR/profile-train-workload" ] || { echo "SKIP: no profile-train-workload (LibTorch)"; exit 2; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "nvidia-smi unavailable"
date -u +%Y-%m-%dT%H:%M:%SZ

WL=(--workload cnn --device cuda --steps 20 --warmup 5 --seed 0)
rc=0

echo "== grid: batch {32,64,128,256,512} x amp {off,bf16,fp16} =="
"$PT" tune --strategy grid --knob batch_size=32,64,128,256,512 --knob amp=off,bf16,fp16 \
  --repeats 1 --baseline-repeats 2 --trial-timeout 120 --time-budget 200 --out "$OUT/grid" "${WL[@]}" || rc=$?

echo "== guided: default knobs (batch_size auto, num_workers, pin_memory, amp) =="
"$PT" tune --strategy guided --repeats 2 --baseline-repeats 3 --trial-timeout 120 --time-budget 150 \
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
        sigma = f"{s['sigma']:.2f}" if s.get("sigma") is not None else "?"
        print(f"  best {d['best']['config']}: x{s['value']:.2f} ± {sigma} vs baseline; change: {d['change']['summary']}")
PY
exit $rc
