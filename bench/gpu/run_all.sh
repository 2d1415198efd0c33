#!/usr/bin/env bash
# All GPU checks in one device call (issues 4, 6, 7): capture, workload scenarios, tune sweep.
# Builds once into build-gpu against the machine's own torch, then runs the three checks in priority order
# under one deadline (PT_GPU_BUDGET_S, default 420 s from the start of this script, build included): capture
# (<= 120 s), workload scenarios (<= 240 s), then tune with what is left (skipped under 60 s). The checks
# write into a work folder ($PT_GPU_WORK, default a new /tmp folder); $OUT receives six files only, because
# the device tool returns at most 8 files, 2 folders deep: SUMMARY.md, run_all.log, capture-check.json,
# workload-summary.json, tune-summary.txt and details.tar.gz (every report.json, run log, check and tune
# file; no raw captures). Headers the GPU machine lacks (nlohmann-json, CLI11, zlib) travel in the ignored
# folder .deps/ made by bench/gpu/make_deps.sh (carry it).
#   OUT=/path bash bench/gpu/run_all.sh
# PT_GPU_DRY_RUN=1 runs the same scripts on a machine without a GPU (CPU only, small; CI does this with
# PT_SKIP_BUILD=1 BUILD_DIR=<its build>), so a script error shows up before device time is spent on it.
set -uo pipefail
start=$SECONDS
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
OUT="${OUT:-$root/out/gpu}"
mkdir -p "$OUT"
FINAL="$OUT"
own_work=""
[ -z "${PT_GPU_WORK:-}" ] && own_work=1
OUT="${PT_GPU_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/pt-gpu-work.XXXXXX")}"
mkdir -p "$OUT"
exec > >(tee "$FINAL/run_all.log") 2>&1
echo "[run_all] work folder $OUT; results to $FINAL"
budget=${PT_GPU_BUDGET_S:-420}
left() { echo $(( budget - (SECONDS - start) )); }
cap() { local a=$1 b=$2; echo $(( a < b ? a : b )); }
export PT_PYTHON="${PT_PYTHON:-$(command -v python3)}"
export BUILD_DIR="${BUILD_DIR:-$root/build-gpu}"
LOG_DIR="$OUT" bash bench/gpu/build.sh \
  || { cp "$OUT"/configure.log "$OUT"/build.log "$FINAL/" 2>/dev/null; exit 1; }
export PT_SKIP_BUILD=1  # the checks below use this build as it is

rc=0
declare -A result=([capture]=- [workload]=- [tune]=-)
checks=" ${PT_GPU_CHECKS:-capture workload tune} "  # a rerun can pick, e.g. PT_GPU_CHECKS=workload
wanted() { [[ "$checks" == *" $1 "* ]]; }
if wanted capture; then
  t=$(cap 120 "$(left)")
  OUT="$OUT/capture" timeout "$t" bash bench/gpu/check_capture.sh; r=$?
  result[capture]=$r; [ $r -eq 0 ] || rc=1
fi

if wanted workload; then
  t=$(cap 240 $(( $(left) - 20 )))
  only=()
  [ -n "${PT_GPU_DRY_RUN:-}" ] && only=(--only input_bound)
  [ -n "${PT_SCENARIOS:-}" ] && read -r -a only <<< "--only $PT_SCENARIOS"  # e.g. PT_SCENARIOS="host_sync tiny"
  if [ "$t" -ge 60 ]; then
    OUT="$OUT/workload" timeout "$t" bash bench/gpu/check_workload.sh "${only[@]}"; r=$?
  else
    echo "[run_all] workload check skipped: ${t}s left"; r=124
  fi
  result[workload]=$r; [ $r -eq 0 ] || rc=1
fi

if wanted tune; then
  t=$(( $(left) - 15 ))
  if [ "$t" -ge 60 ]; then
    OUT="$OUT/tune" PT_TUNE_BUDGET_S=$(( t - 30 )) timeout "$t" bash bench/gpu/check_tune.sh "$BUILD_DIR"; r=$?
  else
    echo "[run_all] tune check skipped: ${t}s left"; r=124
  fi
  result[tune]=$r; [ $r -eq 0 ] || rc=1
fi

{
  echo "# GPU checks $(date -u +%FT%TZ)${PT_GPU_DRY_RUN:+ (DRY RUN, no GPU)}"
  echo
  echo "- machine: $(hostname), $(nproc) cores; GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo none)"
  echo "- torch: $("$PT_PYTHON" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null)"
  echo "- exit codes (124 = out of time, - = not run): capture ${result[capture]}, workload ${result[workload]}, tune ${result[tune]}"
  echo "- wall time: $(( SECONDS - start )) s of a ${budget} s budget"
  echo
  [ -f "$OUT/capture/check.md" ] && sed 's/^#/##/' "$OUT/capture/check.md"
  if [ -f "$OUT/workload/workload-scenarios/summary.md" ]; then
    echo "## Workload scenarios"; echo
    cat "$OUT/workload/workload-scenarios/summary.md"
    echo
  fi
  if [ -f "$OUT/tune/summary.txt" ]; then echo "## Tune"; echo; echo '```'; cat "$OUT/tune/summary.txt"; echo '```'; fi
} > "$FINAL/SUMMARY.md" 2>&1
cat "$FINAL/SUMMARY.md"
[ -f "$OUT/capture/check.json" ] && cp "$OUT/capture/check.json" "$FINAL/capture-check.json"
[ -f "$OUT/workload/workload-scenarios/summary.json" ] && cp "$OUT/workload/workload-scenarios/summary.json" "$FINAL/workload-summary.json"
[ -f "$OUT/tune/summary.txt" ] && cp "$OUT/tune/summary.txt" "$FINAL/tune-summary.txt"
(cd "$OUT" && find . -type f \( -name '*.json' -o -name '*.log' -o -name '*.md' -o -name '*.txt' -o -name '*.html' \) \
   -size -4M -print0 | tar --null -czf "$FINAL/details.tar.gz" --files-from=-) \
  || echo "[run_all] could not pack details.tar.gz"
# A work folder of our own goes (everything worth keeping is in details.tar.gz) unless PT_GPU_KEEP_WORK=1.
[ -n "$own_work" ] && [ -z "${PT_GPU_KEEP_WORK:-}" ] && rm -rf "$OUT"
echo "[run_all] done rc=$rc in $(( SECONDS - start )) s; results in $FINAL ($(ls "$FINAL" | tr '\n' ' '))"
exit $rc
