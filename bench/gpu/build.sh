#!/usr/bin/env bash
# The one build of the GPU checks: configures BUILD_DIR (default build-gpu) against PT_PYTHON's torch and this
# machine's CUDA toolkit (CUPTI required; the headers the GPU machine lacks come from the carried .deps/) and
# builds profile-train, the capture agent and profile-train-workload. Logs go to LOG_DIR (default BUILD_DIR).
# A no-op when PT_SKIP_BUILD is set (run_all.sh builds once, then sets it for the checks).
#   BUILD_DIR=... PT_PYTHON=... bash bench/gpu/build.sh
set -uo pipefail
[ -n "${PT_SKIP_BUILD:-}" ] && exit 0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build-gpu}"
py="${PT_PYTHON:-$(command -v python3)}"
logs="${LOG_DIR:-$build}"
mkdir -p "$build" "$logs"
for tool in cmake ninja c++; do command -v "$tool" >/dev/null || { echo "[build] $tool not found"; exit 1; }; done
prefix=""; [ -d "$root/.deps" ] && prefix="-DCMAKE_PREFIX_PATH=$root/.deps"
start=$SECONDS
echo "[build] configuring $build against $py ($(nproc) cores)"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPT_PYTHON="$py" \
  -DPT_WITH_CUPTI=ON -DPT_WITH_TORCH=ON -DPT_BUILD_TESTS=OFF -DPT_BUILD_BENCH=OFF $prefix > "$logs/configure.log" 2>&1 \
  || { tail -30 "$logs/configure.log"; exit 1; }
ninja -C "$build" -j"${JOBS:-$(nproc)}" profile-train profile_train_agent profile-train-workload > "$logs/build.log" 2>&1 \
  || { grep -E "error|FAILED" "$logs/build.log" | head -30; tail -5 "$logs/build.log"; exit 1; }
echo "[build] built in $(( SECONDS - start )) s"
