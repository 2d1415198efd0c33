#!/usr/bin/env bash
# `analyze --executor ray` against the local executor on the same N synthetic rank files (make_rank_job.py), on a
# private local Ray head (tests/tuner/data/ray_head.sh: 2 CPUs, loopback), interleaved REPEATS times: wall time of
# the local run, of the Ray run with one shard holding every file (the Jobs API's fixed cost per job: submit,
# start of the entry point, polling, log fetch) and of the Ray run with --parallel 2 (2 shards in flight).
# Prints each run and the medians; the per-job overhead is (one shard - local).
# Usage: bench/importer/bench_ray_analyze.sh [RANKS=32] [REPEATS=3]   Env: BUILD, PT_PYTHON (the venv's python)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
ranks="${1:-32}"
repeats="${2:-3}"
py="${PT_PYTHON:-$root/.venv/bin/python}"
ray="$(dirname "$py")/ray"
[ -x "$ray" ] || { echo "bench: no ray next to $py (bash .ci/setup)" >&2; exit 2; }
tmp="/tmp/ptrb-$$"   # short: Ray's socket paths
mkdir -p "$tmp"
trap 'bash "$root/tests/tuner/data/ray_head.sh" stop "$tmp" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
address="$(bash "$root/tests/tuner/data/ray_head.sh" start "$tmp" "$ray" $$)"
"$py" "$here/make_rank_job.py" "$tmp/job" "$ranks" --steps 20
files=("$tmp"/job/rank*.pt.trace.json)
echo "$(nproc) cores; Ray head at $address"
t() { local s e; s=$(date +%s.%N); "$@" >"$tmp/log.txt" 2>&1 || { echo "bench: failed: $*" >&2; tail -5 "$tmp/log.txt" >&2; exit 1; }; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN {printf "%.3f", e - s}'; }
L=(); O=(); P=()
for ((i = 1; i <= repeats; i++)); do
  rm -rf "$tmp/o"; l=$(t "$build/profile-train" analyze "${files[@]}" --format json --quiet --out "$tmp/o")
  rm -rf "$tmp/o"; o=$(t "$build/profile-train" analyze "${files[@]}" --format json --quiet --out "$tmp/o" --executor ray --ray-address "$address" --parallel 1 --ray-shard-size "$ranks")
  rm -rf "$tmp/o"; p=$(t "$build/profile-train" analyze "${files[@]}" --format json --quiet --out "$tmp/o" --executor ray --ray-address "$address" --parallel 2)
  L+=("$l"); O+=("$o"); P+=("$p")
  echo "run $i: local $l s, ray one shard $o s, ray --parallel 2 $p s"
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
l=$(med "${L[@]}"); o=$(med "${O[@]}"); p=$(med "${P[@]}")
awk -v l="$l" -v o="$o" -v p="$p" -v n="$ranks" 'BEGIN {
  printf "median: local %.3f s (%.1f ms/rank), ray one shard %.3f s, ray --parallel 2 %.3f s\n", l, 1000 * l / n, o, p
  printf "Ray Jobs API overhead per job (one shard - local): %.3f s\n", o - l }'
