#!/usr/bin/env bash
# All GPU checks in one device call (issues 4, 6, 7): capture, workload scenarios, tune sweep.
# Builds once into build-gpu against the machine's own torch, then runs the three checks; everything lands
# under $OUT (capture/, workload/, tune/). Headers the GPU machine lacks (nlohmann-json, CLI11) travel in
# the ignored folder .deps/ made by bench/gpu/make_deps.sh (carry it). Budget: ~12 minutes of device time in all.
#   OUT=/path bash bench/gpu/run_all.sh
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
OUT="${OUT:-$root/out/gpu}"
mkdir -p "$OUT"
export PT_PYTHON="${PT_PYTHON:-$(command -v python3)}"
export BUILD_DIR="${BUILD_DIR:-$root/build-gpu}"
prefix=""; [ -d "$root/.deps" ] && prefix="-DCMAKE_PREFIX_PATH=$root/.deps"
cmake -S "$root" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPT_PYTHON="$PT_PYTHON" \
  -DPT_WITH_CUPTI=ON -DPT_WITH_TORCH=ON -DPT_BUILD_TESTS=OFF -DPT_BUILD_BENCH=OFF $prefix > "$OUT/configure.log" 2>&1 \
  || { tail -30 "$OUT/configure.log"; exit 1; }
ninja -C "$BUILD_DIR" -j"$(nproc)" profile-train profile_train_agent profile-train-workload > "$OUT/build.log" 2>&1 \
  || { tail -30 "$OUT/build.log"; exit 1; }
export PT_SKIP_BUILD=1  # the checks below use this build as it is
rc=0
OUT="$OUT/capture" timeout 240 bash bench/gpu/check_capture.sh || rc=1
OUT="$OUT/workload" JOBS="$(nproc)" timeout 240 bash bench/gpu/check_workload.sh || rc=1
OUT="$OUT/tune" timeout 200 bash bench/gpu/check_tune.sh "$BUILD_DIR" || rc=1
echo "[run_all] done rc=$rc; results under $OUT"
exit $rc
