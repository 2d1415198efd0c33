#!/usr/bin/env bash
# Side-by-side speed of `profile-train analyze` on one big trace: a baseline binary (BASE, e.g. main's build)
# against this build (NEW), run alternately RUNS times each on the same file so load changes on a shared
# machine hit both alike. Prints each one's best wall and CPU time (user + sys) and the ratio NEW / BASE.
# The trace is make_big_trace.py's replication of SRC (default: the tb_plugin resnet50 trace) to >= MIN_MB.
# Usage: bench/importer/bench_analyze_ab.sh [MIN_MB] [RUNS]
# Env: BASE (default /work/main/build/profile-train), NEW (default <repo>/build/profile-train), SRC, PT_TRACES_DIR,
#      PYTHON.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
min_mb="${1:-200}"
runs="${2:-5}"
traces="${PT_TRACES_DIR:-$root/../shared/traces}"
py="${PYTHON:-python3}"
base="${BASE:-/work/main/build/profile-train}"
new="${NEW:-$root/build/profile-train}"
src="${SRC:-$traces/kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz}"
for f in "$base" "$new"; do [ -x "$f" ] || { echo "bench: $f is not an executable" >&2; exit 2; }; done
[ -f "$src" ] || { echo "bench: source trace not found: $src" >&2; exit 2; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pt_bench_ab.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
big="$tmp/big.pt.trace.json"
echo "== generating >= ${min_mb} MB from $(basename "$src")"
"$py" "$here/make_big_trace.py" "$src" "$big" "$min_mb"
# The new file's write-back would otherwise run during the first measurements (iowait on this VM).
sync
bytes="$(stat -c %s "$big")"

# one BIN: prints "wall_s cpu_s"
one() {
  local log="$tmp/time.txt"
  /usr/bin/time -v "$1" analyze "$big" --out "$tmp/out" --format json >/dev/null 2>"$log" || { cat "$log" >&2; exit 1; }
  local wall cpu
  wall="$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')"
  cpu="$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$log")"
  echo "$wall $cpu"
}
bw=""; bc=""; nw=""; nc=""
min() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == "" || a < b) print a; else print b }'; }
for ((i = 0; i < runs; i++)); do
  read -r w c < <(one "$base"); bw="$(min "$w" "$bw")"; bc="$(min "$c" "$bc")"
  read -r w c < <(one "$new"); nw="$(min "$w" "$nw")"; nc="$(min "$c" "$nc")"
done
"$py" - "$bytes" "$bw" "$bc" "$nw" "$nc" "$runs" "$base" "$new" <<'PY'
import sys
b, bw, bc, nw, nc = int(sys.argv[1]), *map(float, sys.argv[2:6])
runs, base, new = sys.argv[6:9]
mb = b / 1e6
print(f"file: {mb:.1f} MB; best of {runs} alternating runs each")
print(f"baseline {base}: wall {bw:.2f} s ({mb/bw:.0f} MB/s), cpu {bc:.2f} s")
print(f"this build {new}: wall {nw:.2f} s ({mb/nw:.0f} MB/s), cpu {nc:.2f} s")
print(f"ratio this / baseline: wall {nw/bw:.3f}, cpu {nc/bc:.3f}  (goal: <= 1.05)")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); date: $(date -u +%FT%TZ)"
