#!/usr/bin/env bash
# Speed benchmark: builds a >= MIN_MB (default 520) uncompressed Kineto trace by replicating the real events
# of the tb_plugin resnet50 trace (make_big_trace.py), then measures in the same run:
#   (a) `profile-train analyze FILE --out DIR` end to end (falls back to pt_bench_load = load_trace only,
#       and says so, when analyze is not available or fails), and
#   (b) CPython `json.load` of the same file,
# each with /usr/bin/time -v (wall time, peak RSS). Prints MB/s, events/s, peak RSS / file size and the
# json.load / tool time ratio. The big file is deleted afterwards.
# Usage: bench/importer/bench_analyze.sh [MIN_MB]   Env: BUILD (default <repo>/build), PT_TRACES_DIR, PYTHON
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
min_mb="${1:-520}"
traces="${PT_TRACES_DIR:-$root/../shared/traces}"
py="${PYTHON:-python3}"
src="$traces/kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
[ -f "$src" ] || { echo "bench: source trace not found: $src (set PT_TRACES_DIR)" >&2; exit 2; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/pt_bench.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
big="$tmp/big.pt.trace.json"

echo "== generating >= ${min_mb} MB from $(basename "$src")"
gen="$("$py" "$here/make_big_trace.py" "$src" "$big" "$min_mb")"
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

cli="$build/profile-train"
mode="analyze"
if [ -x "$cli" ]; then
  read -r t_wall t_rss t_rc t_cpu < <(measure tool "$cli" analyze "$big" --out "$tmp/out" --format json)
else
  t_rc=127
fi
if [ "$t_rc" != 0 ]; then
  echo "note: '$cli analyze' unavailable or failed (rc $t_rc): measuring load_trace alone (pt_bench_load)"
  [ -f "$tmp/time.tool.txt" ] && tail -n 3 "$tmp/stdout.txt" 2>/dev/null || true
  mode="load_trace only (pt_bench_load)"
  read -r t_wall t_rss t_rc t_cpu < <(measure tool "$build/bench/importer/pt_bench_load" "$big")
  [ "$t_rc" = 0 ] || { echo "pt_bench_load failed"; cat "$tmp/stdout.txt"; exit 1; }
fi
read -r p_wall p_rss p_rc p_cpu < <(measure python "$py" -c "import json,sys; json.load(open(sys.argv[1]))" "$big")
[ "$p_rc" = 0 ] || { echo "json.load failed"; exit 1; }

"$py" - "$bytes" "$events" "$t_wall" "$t_rss" "$p_wall" "$p_rss" "$mode" "$t_cpu" "$p_cpu" <<'PY'
import sys
b, ev, tw, tr, pw, pr, mode, tc, pc = sys.argv[1:10]
b, ev, tw, tr, pw, pr, tc, pc = int(b), int(ev), float(tw), int(tr), float(pw), int(pr), float(tc), float(pc)
mb = b / 1e6
print(f"file: {mb:.1f} MB uncompressed, {ev} events")
print(f"profile-train [{mode}]: wall {tw:.2f} s = {mb/tw:.0f} MB/s, {ev/tw/1e6:.2f} M events/s; "
      f"cpu {tc:.2f} s = {mb/tc:.0f} MB/s; peak RSS {tr/1024:.0f} MiB = {tr*1024/b:.2f}x file size")
print(f"python3 json.load: wall {pw:.2f} s = {mb/pw:.0f} MB/s; cpu {pc:.2f} s; "
      f"peak RSS {pr/1024:.0f} MiB = {pr*1024/b:.2f}x file size")
print(f"speed ratio json.load / profile-train: wall {pw/tw:.1f}x, cpu {pc/tc:.1f}x  "
      f"(goal >= 3x; memory goal <= 1.5x file size)")
PY
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load average during the run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u +%FT%TZ)"
