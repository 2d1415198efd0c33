#!/bin/sh
# False-alarm rate of tune's quality guard: N runs (default 10) of one unchanged program whose runs differ only
# by chance (tests/tuner/data/lr_scaling_train.py with LR_TRAIN_SEED=random: random initialization and batch
# order), each compared with the next 3 runs as its baseline by the guard's own code (bench_loss_guard).
# Also the same for the seeded program (identical losses: the floor alone decides). About 10 s a run here.
# Usage: bench/tune/guard_false_alarm.sh BUILD_DIR PYTHON [N]
set -eu
build=${1:?build dir}
python=${2:?python}
n=${3:-10}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d /tmp/pt_guard_bench.XXXXXX)
for mode in random seeded; do
  i=1
  while [ "$i" -le "$n" ]; do
    if [ "$mode" = random ]; then seed=random; else seed=; fi
    LR_TRAIN_SEED=$seed LR_TRAIN_STEPS=24 "$build/profile-train" run -q --out "$out/$mode-$i" -- \
      "$python" "$src/tests/tuner/data/lr_scaling_train.py" >/dev/null 2>&1
    i=$((i + 1))
  done
  echo "== $mode: $n runs of an unchanged program =="
  "$build/bench/tune/bench_loss_guard" --baseline-runs 3 "$out/$mode"-*/report.json
done
rm -rf "$out"
