#!/usr/bin/env bash
# Builds one fuzz target of bench/fuzz with clang in build-fuzz and runs it (default 600 s) at low
# priority, seeded by make_seeds.py. Prints executions, coverage and the number of findings.
# Usage: bench/fuzz/fuzz.sh native|rules|report_diff|nsys [SECONDS]
# Env: BUILD (default <repo>/build-fuzz), PROFILE_TRAIN (a built CLI for report seeds; default build/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build-fuzz}"
target="${1:?usage: fuzz.sh native|rules|report_diff|nsys [SECONDS]}"
secs="${2:-600}"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" \
    -DPT_FUZZ=ON -DPT_BUILD_TESTS=OFF -DPT_WITH_TORCH=OFF -DPT_WITH_CUPTI=OFF >/dev/null
fi
nice -n 19 ninja -C "$build" -j1 "pt_fuzz_$target"

work="$build/fuzz-$target"
corpus="$work/corpus"
mkdir -p "$corpus"
PROFILE_TRAIN="${PROFILE_TRAIN:-$root/build/profile-train}" python3 "$root/bench/fuzz/make_seeds.py" "$target" "$corpus" "$root"
echo "seeds + corpus: $(ls "$corpus" | wc -l) files in $corpus"

cd "$work"
stamp="$work/.start"
touch "$stamp"
start=$(date -u +%FT%TZ)
rc=0
nice -n 19 "$build/bench/fuzz/pt_fuzz_$target" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 "$corpus" > "$work/fuzz.log" 2>&1 || rc=$?
echo "target $target: started $start, ended $(date -u +%FT%TZ), libFuzzer exit code $rc"
grep -E '^#[0-9]+ +(DONE|pulse)|stat::|SUMMARY|ERROR' "$work/fuzz.log" | tail -n 12
findings="$(find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) -newer "$stamp" | wc -l)"
echo "findings (crash/timeout/oom/leak files from this run): $findings"
[ "$findings" = 0 ] && [ "$rc" = 0 ]
