#!/usr/bin/env bash
# GPU capture check (issue 4; one command, about a minute on a GPU machine once built):
#   OUT=/path bash bench/gpu/check_capture.sh
# Builds with bench/gpu/build.sh (unless PT_SKIP_BUILD is set, as run_all.sh does), runs a real CUDA training loop (tests/agent/data/train_cuda.py) under `profile-train run`
# twice (pageable and pinned host memory) and asserts from the raw native captures (bench/gpu/check_capture.py)
# that CUPTI was enabled and that kernels, runtime API calls, H2D copies with their source memory kinds, and
# steps were captured. Results go to $OUT (default ./out/gpu-check): check.md, check.json, log.txt, the
# reports and the captures.
# PT_GPU_DRY_RUN=1: the same on a machine without a GPU (train_cuda.py --device cpu); GPU checks are "n/a"
# and the CPU-side ones (steps, NVTX, CUPTI's reason for recording nothing) must pass. CI runs this.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-$root/out/gpu-check}"
PY="${PT_PYTHON:-$(command -v python3)}"
build="${BUILD_DIR:-$root/build-gpu}"
dry="${PT_GPU_DRY_RUN:-}"
steps="${PT_CHECK_STEPS:-40}"
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
echo "[gpu-check] $(date -u +%FT%TZ) on $(hostname); python $PY${dry:+; DRY RUN (no GPU)}"
if [ -z "$dry" ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpu', torch.cuda.get_device_name())"
fi

BUILD_DIR="$build" PT_PYTHON="$PY" LOG_DIR="$OUT" bash "$root/bench/gpu/build.sh"

status=0
for mode in pageable pinned; do
  flags=(--steps "$steps")
  [ "$mode" = pinned ] && flags+=(--pin-memory)
  [ -n "$dry" ] && flags+=(--device cpu)
  rm -rf "${OUT:?}/$mode"
  set +e
  timeout 120 "$build/profile-train" run --out "$OUT/$mode" -- "$PY" "$root/tests/agent/data/train_cuda.py" \
    "${flags[@]}"
  rc=$?
  set -e
  echo "[gpu-check] $mode: profile-train run exit code $rc"
  [ $rc -eq 0 ] || status=1
done

"$PY" "$root/bench/gpu/check_capture.py" "$OUT" ${dry:+--dry-run} || status=1
echo "[gpu-check] overall: $([ $status -eq 0 ] && echo PASS || echo FAIL); results in $OUT"
exit $status
