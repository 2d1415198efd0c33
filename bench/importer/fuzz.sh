#!/usr/bin/env bash
# Builds the importer fuzz target with clang in build-fuzz and runs it (default 600 s) at low priority,
# seeded with small real traces (decompressed) from PT_TRACES_DIR.
# Usage: bench/importer/fuzz.sh [SECONDS]   Env: PT_TRACES_DIR, BUILD (default <repo>/build-fuzz)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build-fuzz}"
secs="${1:-600}"
traces="${PT_TRACES_DIR:-$root/../shared/traces}"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" \
  -DPT_FUZZ=ON -DPT_BUILD_TESTS=OFF -DPT_WITH_TORCH=OFF -DPT_WITH_CUPTI=OFF >/dev/null
nice -n 19 ninja -C "$build" -j1 pt_fuzz_importer

corpus="$build/fuzz-corpus"
mkdir -p "$corpus"
if [ -d "$traces" ]; then
  i=0
  while IFS= read -r f; do
    out="$corpus/seed_$i.json"
    gzip -dcf "$f" > "$out" 2>/dev/null || true
    if [ "$(stat -c %s "$out")" -gt 262144 ]; then rm -f "$out"; else i=$((i + 1)); fi
  done < <(find "$traces" -name '*.json*' ! -path '*/_derived/*' ! -name manifest.json -size -40k | sort)
  # one gzip seed so the decompression path is covered
  small="$(find "$traces" -name '*.json.gz' ! -path '*/_derived/*' -size -4k | sort | head -1)"
  [ -n "$small" ] && cp "$small" "$corpus/seed_gz.json.gz"
  echo "seeds: $(ls "$corpus" | wc -l) files in $corpus"
else
  echo "PT_TRACES_DIR not found ($traces): starting from tiny inline seeds"
fi
printf '{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":"stream 7","ts":1.5,"dur":2,"args":{"grid":[1,2,3]}}]}' > "$corpus/inline_1.json"
printf '[{"ph":"i","name":"[memory]","ts":1,"args":{"Bytes":4}}]' > "$corpus/inline_2.json"

cd "$build"
touch "$corpus"
start=$(date -u +%FT%TZ)
rm -f "$build"/fuzz-0.log
rc=0
nice -n 19 "$build/bench/importer/pt_fuzz_importer" -max_total_time="$secs" -jobs=1 -workers=1 \
  -max_len=262144 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "$corpus" > "$build/fuzz.log" 2>&1 || rc=$?
[ -f "$build/fuzz-0.log" ] && cat "$build/fuzz-0.log" >> "$build/fuzz.log"
echo "started $start, ended $(date -u +%FT%TZ), libFuzzer exit code $rc"
grep -E '^#[0-9]+ +(DONE|pulse)|stat::|SUMMARY|ERROR' "$build/fuzz.log" | tail -n 12
findings="$(find "$build" -maxdepth 1 \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) -newer "$corpus" | wc -l)"
echo "findings (crash/timeout/oom/leak files from this run): $findings"
[ "$findings" = 0 ] && [ "$rc" = 0 ]
