#!/usr/bin/env bash
# Speed benchmark: builds a >= MIN_MB (default 520) uncompressed Kineto trace by replicating the real events
# of the tb_plugin resnet50 trace (make_big_trace.py), then measures in the same run, best of RUNS each:
#   (a) ingest: load_trace alone (pt_bench_load: read, parse, build the model),
#   (b) `profile-train analyze FILE --out DIR` end to end (ingest + analysis + report.json),
#   (c) CPython `json.load` of the same file,
#   (d) with GZ=1, ingest of the file gzipped (-6),
# each with /usr/bin/time -v (wall time, peak RSS). Prints MB/s, events/s, peak RSS / file size and the
# json.load / tool time ratios. The big file is deleted afterwards.
# Usage: bench/importer/bench_analyze.sh [MIN_MB] [RUNS]   Env: BUILD (default <repo>/build), PT_TRACES_DIR,
# PYTHON, GZ=1
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
min_mb="${1:-520}"
runs="${2:-5}"
traces="${PT_TRACES_DIR:-$root/../shared/traces}"
py="${PYTHON:-python3}"
src="$traces/kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
[ -f "$src" ] || { echo "bench: source trace not found: $src (set PT_TRACES_DIR)" >&2; exit 2; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/pt_bench.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
big="$tmp/big.pt.trace.json"

echo "== generating >= ${min_mb} MB from $(basename "$src")"
gen="$("$py" "$here/make_big_trace.py" "$src" "$big" "$min_mb")"
# The new file's write-back would otherwise run during the first measurements (iowait on this VM).
sync
echo "$gen"
events="$(sed -n 's/.*events=\([0-9]*\).*/\1/p' <<<"$gen")"
bytes="$(stat -c %s "$big")"

# measure LABEL CMD... : runs under /usr/bin/time -v, prints "wall_s rss_kb rc cpu_s" (cpu = user + sys;
# on a shared, busy machine CPU time is the steadier figure).
measure() {
  local log="$tmp/time.$1.txt"; shift
  local rc=0
  /usr/bin/time -v "$@" >"$tmp/stdout.txt" 2>"$log" || rc=$?
  local wall rss cpu
  wall="$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')"
  rss="$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")"
  cpu="$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$log")"
  echo "$wall $rss $rc $cpu"
}

# best LABEL CMD... : runs CMD $runs times; prints the best "wall_s rss_kb rc cpu_s" (by wall; rc of the
# last run). A shared machine makes single runs noisy: the best of several is the figure of the code.
best() {
  local label="$1"; shift
  local bw="" br="" bc="" rc=0 w r c
  for ((i = 0; i < runs; i++)); do
    read -r w r rc c < <(measure "$label" "$@")
    [ "$rc" = 0 ] || break
    if [ -z "$bw" ] || awk -v a="$w" -v b="$bw" 'BEGIN {exit !(a < b)}'; then bw=$w; br=$r; fi
    if [ -z "$bc" ] || awk -v a="$c" -v b="$bc" 'BEGIN {exit !(a < b)}'; then bc=$c; fi
  done
  echo "${bw:-0} ${br:-0} $rc ${bc:-0}"
}

cli="$build/profile-train"
loader="$build/bench/importer/pt_bench_load"
[ -x "$loader" ] || { echo "bench: $loader not built (cmake --build build --target pt_bench_load)" >&2; exit 2; }
read -r i_wall i_rss i_rc i_cpu < <(best ingest "$loader" "$big")
[ "$i_rc" = 0 ] || { echo "pt_bench_load failed"; cat "$tmp/stdout.txt"; exit 1; }
mode="analyze"
if [ -x "$cli" ]; then
  read -r t_wall t_rss t_rc t_cpu < <(best tool "$cli" analyze "$big" --out "$tmp/out" --format json)
else
  t_rc=127
fi
if [ "$t_rc" != 0 ]; then
  echo "note: '$cli analyze' unavailable or failed (rc $t_rc): end-to-end figure left out"
  mode="unavailable"; t_wall=0; t_rss=0; t_cpu=0
fi
read -r p_wall p_rss p_rc p_cpu < <(best python "$py" -c "import json,sys; json.load(open(sys.argv[1]))" "$big")
[ "$p_rc" = 0 ] || { echo "json.load failed"; exit 1; }
gz_line=""
if [ "${GZ:-0}" = 1 ]; then
  gzip -c -6 "$big" > "$big.gz"
  read -r g_wall _ g_rc g_cpu < <(best ingest_gz "$loader" "$big.gz")
  [ "$g_rc" = 0 ] && gz_line="$(stat -c %s "$big.gz") $g_wall $g_cpu"
  rm -f "$big.gz"
fi

"$py" - "$bytes" "$events" "$i_wall" "$i_rss" "$i_cpu" "$t_wall" "$t_rss" "$t_cpu" "$p_wall" "$p_rss" "$p_cpu" "$mode" "$runs" "$gz_line" <<'PY'
import sys
a = sys.argv[1:]
b, ev = int(a[0]), int(a[1])
iw, ir, ic, tw, tr, tc, pw, pr, pc = float(a[2]), int(a[3]), float(a[4]), float(a[5]), int(a[6]), float(a[7]), float(a[8]), int(a[9]), float(a[10])
mode, runs, gz = a[11], a[12], a[13]
mb = b / 1e6
print(f"file: {mb:.1f} MB uncompressed, {ev} events; best of {runs} runs each (wall; cpu = user + sys)")
print(f"ingest (load_trace, pt_bench_load): wall {iw:.2f} s = {mb/iw:.0f} MB/s, {ev/iw/1e6:.2f} M events/s; "
      f"cpu {ic:.2f} s = {mb/ic:.0f} MB/s; peak RSS {ir/1024:.0f} MiB = {ir*1024/b:.2f}x file size")
if mode == "analyze":
    print(f"analyze end to end: wall {tw:.2f} s = {mb/tw:.0f} MB/s; cpu {tc:.2f} s = {mb/tc:.0f} MB/s; "
          f"peak RSS {tr/1024:.0f} MiB = {tr*1024/b:.2f}x file size")
if gz:
    gb, gw, gc = gz.split()
    print(f"ingest of the same file gzipped ({int(gb)/1e6:.1f} MB): wall {float(gw):.2f} s = {mb/float(gw):.0f} MB/s "
          f"(of JSON); cpu {float(gc):.2f} s")
print(f"python3 json.load: wall {pw:.2f} s = {mb/pw:.0f} MB/s; cpu {pc:.2f} s; "
      f"peak RSS {pr/1024:.0f} MiB = {pr*1024/b:.2f}x file size")
line = f"speed ratio json.load / ingest: wall {pw/iw:.1f}x, cpu {pc/ic:.1f}x"
if mode == "analyze":
    line += f"; json.load / analyze: wall {pw/tw:.1f}x, cpu {pc/tc:.1f}x"
print(line + "  (goals: ingest >= 400 MB/s; >= 3x json.load; memory <= 1.5x file size)")
PY
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load average during the run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u +%FT%TZ)"
