#!/usr/bin/env bash
# Multi-rank loading benchmark: `profile-train analyze` of N rank files of one job (N = 1, 2, 4, 8), loaded one
# at a time (--jobs 1, the baseline measured in the same run) and in parallel (--jobs 0 = auto: the cores, at
# most 8, within memory). Each rank file is a distinct copy of a >= MIN_MB Kineto trace built from the real
# tb_plugin resnet50 trace (make_big_trace.py), with its own distributed rank so the files are one job.
# Prints wall time, MB/s over all files, peak RSS, and the speed-up of auto over --jobs 1 for each N; also the
# single-file CPython json.load time and the ratio to it. Files are deleted afterwards.
# Usage: bench/importer/bench_ranks.sh [MIN_MB] [MAX_N]   Env: BUILD, PT_TRACES_DIR, PYTHON
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
min_mb="${1:-60}"
max_n="${2:-8}"
traces="${PT_TRACES_DIR:-$root/../shared/traces}"
py="${PYTHON:-python3}"
src="$traces/kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
[ -f "$src" ] || { echo "bench: source trace not found: $src (set PT_TRACES_DIR)" >&2; exit 2; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pt_bench_ranks.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "== generating a >= ${min_mb} MB trace and $max_n rank copies"
"$py" "$here/make_big_trace.py" "$src" "$tmp/base.json" "$min_mb" >/dev/null
for ((r = 0; r < max_n; r++)); do
  "$py" - "$tmp/base.json" "$tmp/rank$r.pt.trace.json" "$r" "$max_n" <<'PY'
import sys
src, dst, rank, world = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
text = open(src).read()
head = '{"distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d}, ' % (rank, world)
assert text.lstrip().startswith("{")
open(dst, "w").write(head + text.lstrip()[1:])
PY
done
bytes="$(stat -c %s "$tmp/rank0.pt.trace.json")"
echo "rank file: $((bytes / 1000000)) MB; $(nproc) cores"

measure() {  # prints "wall_s rss_kb rc"
  local log="$tmp/time.txt" rc=0
  /usr/bin/time -v "$@" >"$tmp/out.txt" 2>"$log" || rc=$?
  local wall rss
  wall="$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')"
  rss="$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")"
  echo "$wall $rss $rc"
}

read -r jw jr _ < <(measure "$py" -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/rank0.pt.trace.json")
printf '%-8s %10s %10s %10s %12s %9s\n' files jobs wall_s MB/s peak_RSS_MB speedup
for n in 1 2 4 8; do
  ((n <= max_n)) || break
  files=()
  for ((r = 0; r < n; r++)); do files+=("$tmp/rank$r.pt.trace.json"); done
  read -r w1 r1 c1 < <(measure "$build/profile-train" analyze "${files[@]}" --jobs 1 --format json --out "$tmp/o1")
  read -r wa ra ca < <(measure "$build/profile-train" analyze "${files[@]}" --jobs 0 --format json --out "$tmp/oa")
  [ "$c1" = 0 ] && [ "$ca" = 0 ] || { echo "bench: analyze failed (rc $c1 / $ca)" >&2; cat "$tmp/out.txt" >&2; exit 1; }
  mb=$(awk -v b="$bytes" -v n="$n" 'BEGIN {print b * n / 1e6}')
  awk -v n="$n" -v w="$w1" -v r="$r1" -v mb="$mb" 'BEGIN {printf "%-8d %10s %10.2f %10.0f %12.0f %9s\n", n, "1", w, mb / w, r / 1024, "1.00x"}'
  awk -v n="$n" -v w="$wa" -v r="$ra" -v mb="$mb" -v w1="$w1" 'BEGIN {printf "%-8d %10s %10.2f %10.0f %12.0f %8.2fx\n", n, "auto", w, mb / w, r / 1024, w1 / w}'
  rm -rf "$tmp/o1" "$tmp/oa"
done
read -r w1 _ _ < <(measure "$build/profile-train" analyze "$tmp/rank0.pt.trace.json" --format json --out "$tmp/o1")
awk -v jw="$jw" -v w="$w1" -v b="$bytes" 'BEGIN {printf "one file: analyze %.2f s (%.0f MB/s), CPython json.load %.2f s: %.2fx json.load\n", w, b / 1e6 / w, jw, jw / w}'
