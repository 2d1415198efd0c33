#!/usr/bin/env bash
# GPU check of the built-in workload (issue 6): on a machine with an NVIDIA GPU and a CUDA build of torch,
# builds profile-train, its capture agent and profile-train-workload against that machine's torch, runs every
# scenario of bench/scenarios/ under `profile-train run`, and records verdicts and throughput under $OUT:
#   $OUT/workload-scenarios/<scenario>/{report.json,report.html,workload-result.json,run.log}
#   $OUT/workload-scenarios/summary.json       (date, GPU, per-scenario verdict / first fix / samples/s)
#   $OUT/workload-<UTC date>-<gpu>.json         (the same summary, named for bench/results/)
#   $OUT/check_workload.log                     (build + driver output)
# Usage: OUT=/some/dir bench/gpu/check_workload.sh [extra run_scenarios.py options, e.g. --only input_bound]
# Env: PT_PYTHON = python with torch (default: the project .venv, else python3); BUILD_DIR (default build-gpu);
#      JOBS (default: all cores); PT_SKIP_BUILD=1 uses BUILD_DIR as it is (run_all.sh);
#      PT_GPU_DRY_RUN=1 runs the same steps on a machine without a GPU (CPU smoke test, CPU scenarios only).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
LOG="$OUT/check_workload.log"
exec > >(tee -a "$LOG") 2>&1

say() { echo "[check_workload] $*"; }
fail() { say "FAILED: $*"; exit 1; }

DRY="${PT_GPU_DRY_RUN:-}"
if [[ -n "$DRY" ]]; then
  say "DRY RUN: no GPU; CPU smoke test and the CPU scenarios only"
  GPU_NAME="no-GPU-dry-run"
else
  command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: this check needs a GPU machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || fail "nvidia-smi cannot see a GPU"
  GPU_NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
fi

PY="${PT_PYTHON:-}"
if [[ -z "$PY" ]]; then
  if [[ -x .venv/bin/python ]] && .venv/bin/python -c "import torch" 2>/dev/null; then PY="$PWD/.venv/bin/python"
  else PY="$(command -v python3 || true)"; fi
fi
[[ -n "$PY" ]] || fail "no python found (set PT_PYTHON to a python with torch)"
"$PY" - <<'PYEOF' || fail "$PY cannot import torch (set PT_PYTHON)"
import torch
print("[check_workload] torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
PYEOF
[[ -n "$DRY" ]] || "$PY" -c "import torch, sys; sys.exit(0 if torch.version.cuda else 1)" || fail "$PY has a CPU-only torch"

BUILD="${BUILD_DIR:-build-gpu}"
BUILD_DIR="$BUILD" PT_PYTHON="$PY" LOG_DIR="$OUT" bash bench/gpu/build.sh || fail "build"

# Smoke test: the workload sees the GPU (exit 2 means LibTorch sees no CUDA device).
"$BUILD/profile-train-workload" --model mlp --steps 3 --warmup 1 --device "$([[ -n "$DRY" ]] && echo cpu || echo cuda)" \
  --result "$OUT/smoke.json" || fail "the workload cannot train on the GPU"

say "running the scenarios"
python3 bench/scenarios/run_scenarios.py --build "$BUILD" --out "$OUT/workload-scenarios" --timeout 150 "$@"
rc=$?
stamp="$(date -u +%Y-%m-%d)"
gpu_slug="$(echo "$GPU_NAME" | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' | sed 's/-$//')"
if [[ -f "$OUT/workload-scenarios/summary.json" ]]; then
  cp "$OUT/workload-scenarios/summary.json" "$OUT/workload-$stamp-$gpu_slug.json"
  say "summary: $OUT/workload-$stamp-$gpu_slug.json (copy it to bench/results/)"
fi
exit $rc
