#!/usr/bin/env bash
# HTML report benchmark: size and headless-Chromium render time of report.html for a >= MIN_MB (default
# 520) input trace, against a baseline measured in the same run (the fixture report's HTML).
#
# Cases, each rendered RUNS times in headless Chromium (--dump-dom; the page writes data-render-ms =
# performance.now() at the end of its scripts, i.e. navigation start -> parsed, scripted, timeline drawn):
#   baseline  tests/report/fixtures/report_input_pipeline.json, no trace
#   big       `profile-train analyze BIG --format json,html` on a >= MIN_MB Kineto trace made by
#             bench/importer/make_big_trace.py (real tb_plugin events replicated: many normal steps)
#   one-step  pt_render_report with a single step of EVENTS (default 2,000,000, ~ a 500 MB trace's worth)
#             events: the worst case for the timeline, which must merge/summarize to stay small
# Limits checked: HTML < 10 MB and render < 2000 ms for big and one-step. Exit 1 when a limit is crossed.
# Usage: bench/report/bench_html.sh [MIN_MB] [--record]   (--record appends the table to
#        bench/results/report-<date>.md)   Env: BUILD (default <repo>/build), PT_TRACES_DIR, PYTHON, RUNS, EVENTS
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
min_mb=520
record=0
for a in "$@"; do
  case "$a" in
    --record) record=1 ;;
    *) min_mb="$a" ;;
  esac
done
runs="${RUNS:-3}"
events="${EVENTS:-2000000}"
traces="${PT_TRACES_DIR:-$root/../shared/traces}"
py="${PYTHON:-python3}"
src="$traces/kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
[ -n "$browser" ] || { echo "bench: chromium not found (apt-get install chromium)" >&2; exit 2; }
[ -x "$build/bench/report/pt_render_report" ] || { echo "bench: build pt_render_report first (BUILD=$build)" >&2; exit 2; }
[ -x "$build/profile-train" ] || { echo "bench: build profile-train first (BUILD=$build)" >&2; exit 2; }
[ -f "$src" ] || { echo "bench: source trace not found: $src (set PT_TRACES_DIR)" >&2; exit 2; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/pt_bench_html.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
sandbox=()
[ "$(id -u)" -eq 0 ] && sandbox=(--no-sandbox)

# render FILE -> prints "median_render_ms median_wall_ms status" over $runs runs
render() {
  local file="$1" ms=() walls=() status=ok
  for ((i = 0; i < runs; i++)); do
    local prof="$tmp/profile.$i"
    rm -rf "$prof"
    local t0 t1
    t0=$(date +%s%N)
    timeout 120 "$browser" --headless "${sandbox[@]}" --disable-gpu --disable-background-networking --no-first-run \
      --user-data-dir="$prof" --dump-dom "file://$file" >"$tmp/dom.html" 2>/dev/null || status="chromium-failed"
    t1=$(date +%s%N)
    walls+=($(( (t1 - t0) / 1000000 )))
    local body
    body="$(grep -o '<body [^>]*>' "$tmp/dom.html" | tail -n 1 || true)"
    grep -q 'data-render="ok"' <<<"$body" || status="page-error"
    ms+=("$(sed -n 's/.*data-render-ms="\([0-9.]*\)".*/\1/p' <<<"$body")")
  done
  local med_ms med_wall
  med_ms="$(printf '%s\n' "${ms[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "nan")}')"
  med_wall="$(printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
  echo "$med_ms $med_wall $status"
}

echo "== baseline: fixture report"
"$build/bench/report/pt_render_report" "$root/tests/report/fixtures/report_input_pipeline.json" "$tmp/baseline.html" 2>/dev/null
read -r b_ms b_wall b_status < <(render "$tmp/baseline.html")
b_size=$(stat -c %s "$tmp/baseline.html")

echo "== big: >= ${min_mb} MB Kineto trace through profile-train analyze"
gen="$("$py" "$root/bench/importer/make_big_trace.py" "$src" "$tmp/big.json" "$min_mb")"
echo "   $gen"
big_bytes=$(stat -c %s "$tmp/big.json")
t0=$(date +%s%N)
"$build/profile-train" analyze "$tmp/big.json" --out "$tmp/out" --format json,html -q >/dev/null 2>"$tmp/analyze.err" || {
  echo "analyze failed:"; tail -n 5 "$tmp/analyze.err"; exit 1; }
t1=$(date +%s%N)
analyze_ms=$(( (t1 - t0) / 1000000 ))
rm -f "$tmp/big.json"
g_size=$(stat -c %s "$tmp/out/report.html")
read -r g_ms g_wall g_status < <(render "$tmp/out/report.html")
g_drawn="$(grep -o 'data-drawn="[0-9]*"' "$tmp/out/report.html" | head -n 1 | tr -dc 0-9)"

echo "== one-step: a single step of $events events"
"$build/bench/report/pt_render_report" "$root/tests/report/fixtures/report_input_pipeline.json" "$tmp/onestep.html" \
  --synthetic-events "$events" 2>"$tmp/onestep.err"
o_size=$(stat -c %s "$tmp/onestep.html")
read -r o_ms o_wall o_status < <(render "$tmp/onestep.html")
o_drawn="$(grep -o 'data-drawn="[0-9]*"' "$tmp/onestep.html" | head -n 1 | tr -dc 0-9)"

machine="$(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1e6}' /proc/meminfo), $("$browser" --version 2>/dev/null | head -n 1)"
table="$("$py" - "$b_size" "$b_ms" "$b_wall" "$b_status" "$g_size" "$g_ms" "$g_wall" "$g_status" "$o_size" "$o_ms" \
  "$o_wall" "$o_status" "$big_bytes" "$analyze_ms" "$events" "${g_drawn:-0}" "${o_drawn:-0}" <<'PY'
import sys
a = sys.argv[1:]
b_size, b_ms, b_wall, b_st, g_size, g_ms, g_wall, g_st, o_size, o_ms, o_wall, o_st, big, an_ms, ev, g_dr, o_dr = a
def f(x):
    try: return float(x)
    except ValueError: return float("nan")
rows = [
    ("baseline (fixture report)", "-", b_size, b_ms, b_wall, b_st, "-"),
    ("big: %.0f MB Kineto trace, analyze" % (f(big) / 1e6), "%.1f s analyze" % (f(an_ms) / 1e3), g_size, g_ms, g_wall, g_st, g_dr),
    ("one-step: %s events in one step" % ev, "-", o_size, o_ms, o_wall, o_st, o_dr),
]
print("| case | input | HTML size | render (page, median) | chromium wall (median) | vs baseline render | timeline blocks | status |")
print("|---|---|---|---|---|---|---|---|")
for name, inp, size, ms, wall, st, drawn in rows:
    ratio = f(ms) / f(b_ms) if f(b_ms) > 0 else float("nan")
    print("| %s | %s | %.2f MB | %.0f ms | %s ms | %.2fx | %s | %s |" % (name, inp, f(size) / 1e6, f(ms), wall, ratio, drawn, st))
ok = all(f(s) < 10e6 and f(m) < 2000 and st == "ok" for s, m, st in ((g_size, g_ms, g_st), (o_size, o_ms, o_st)))
print()
print("limits (HTML < 10 MB, render < 2000 ms): " + ("PASS" if ok else "FAIL"))
PY
)"
echo
echo "$table"
if [ "$record" = 1 ]; then
  day="$(date -u +%Y-%m-%d)"
  out="$root/bench/results/report-$day.md"
  mkdir -p "$root/bench/results"
  {
    echo "## HTML report benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "Machine: $machine. Command: \`bench/report/bench_html.sh $min_mb --record\` (RUNS=$runs, BUILD=$build)."
    echo
    echo "$table"
    echo
  } >>"$out"
  echo "recorded in $out"
fi
grep -q "PASS" <<<"$table"
