#!/usr/bin/env bash
# The job summary's cost (issue 40): `profile-train analyze` of N synthetic rank files of one job (make_rank_job.py:
# 8 NCCL all-reduces per step with collective args, a planted late rank; the job summary matches every collective
# across the ranks) against the same N files without distributedInfo (not one job: no job summary, nothing
# matched), interleaved A B A B ... REPEATS times. Prints wall and CPU (user+sys) seconds of each run, the medians
# and the ratio job / files alone.
# Usage: bench/importer/bench_job_summary.sh [RANKS=64] [REPEATS=5] [STEPS=20]   Env: BUILD, PYTHON
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
ranks="${1:-64}"
repeats="${2:-5}"
steps="${3:-20}"
py="${PYTHON:-python3}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pt_bench_job.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
"$py" "$here/make_rank_job.py" "$tmp/job" "$ranks" --steps "$steps"
"$py" "$here/make_rank_job.py" "$tmp/alone" "$ranks" --steps "$steps" --no-distributed >/dev/null
echo "$(nproc) cores; $ranks ranks x $steps steps"

measure() {  # prints "wall_s cpu_s peak_rss_mb"
  local log="$tmp/time.txt"
  rm -rf "$tmp/out"
  /usr/bin/time -f "%e %U %S %M" -o "$log" "$build/profile-train" analyze "$@" --format json,html --out "$tmp/out" >"$tmp/log.txt" 2>&1 ||
    { echo "bench: analyze failed" >&2; tail -5 "$tmp/log.txt" >&2; exit 1; }
  awk '{printf "%.3f %.3f %.0f\n", $1, $2 + $3, $4 / 1024}' "$log"
}

job_w=(); job_c=(); alone_w=(); alone_c=()
printf '%-4s %-6s %8s %8s %12s\n' run set wall_s cpu_s peak_RSS_MB
for ((i = 1; i <= repeats; i++)); do
  read -r w c m < <(measure "$tmp"/job/rank*.pt.trace.json)
  [ -f "$tmp/out/job.json" ] || { echo "bench: no job.json for the job set" >&2; exit 1; }
  job_w+=("$w"); job_c+=("$c"); printf '%-4d %-6s %8s %8s %12s\n' "$i" job "$w" "$c" "$m"
  read -r w c m < <(measure "$tmp"/alone/rank*.pt.trace.json)
  [ ! -f "$tmp/out/job.json" ] || { echo "bench: the files without distributedInfo made a job" >&2; exit 1; }
  alone_w+=("$w"); alone_c+=("$c"); printf '%-4d %-6s %8s %8s %12s\n' "$i" alone "$w" "$c" "$m"
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
jw=$(med "${job_w[@]}"); jc=$(med "${job_c[@]}"); aw=$(med "${alone_w[@]}"); ac=$(med "${alone_c[@]}")
awk -v jw="$jw" -v jc="$jc" -v aw="$aw" -v ac="$ac" -v n="$ranks" 'BEGIN {
  printf "median: job %.3f s wall / %.3f s CPU; files alone %.3f s wall / %.3f s CPU\n", jw, jc, aw, ac
  printf "job summary / files alone: %.3fx wall, %.3fx CPU; %.2f ms CPU per rank for the summary\n", jw / aw, jc / ac, (jc - ac) * 1000 / n }'
