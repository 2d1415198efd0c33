#!/usr/bin/env bash
# Cost of the shim's per-module forward ranges (PROFILE_TRAIN_MODULE_RANGES): the same CPU training loop under
# `profile-train run` without and with module ranges, REPEATS times each, interleaved (ABAB: machines here are
# noisy). Prints the median CPU ms per step of each (the process's CPU time: immune to waiting for a core on a
# shared machine), the ratio, and the cost per range.
# Usage: bench/agent/module_ranges_bench.sh [BUILD_DIR] [REPEATS]   (default build, 5)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
repeats="${2:-5}"
py="$root/.venv/bin/python"
script="$root/tests/agent/data/train_slow_loader.py"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
steps=300
declare -a off on
for ((i = 0; i < repeats; ++i)); do
  for mode in 0 1; do
    line=$(PROFILE_TRAIN_MODULE_RANGES=$mode "$build/profile-train" run --out "$out/r$i-$mode" -- "$py" "$script" \
             --workers 0 --sample-ms 0 --steps $steps --hidden 256 2>/dev/null | grep -o '[0-9.]* cpu-ms/step' | head -1)
    ms=${line% cpu-ms/step}
    if [[ $mode == 0 ]]; then off+=("$ms"); else on+=("$ms"); fi
  done
done
python3 - "$steps" "${off[*]}" "${on[*]}" <<'PY'
import statistics, sys
steps = int(sys.argv[1])
off = [float(x) for x in sys.argv[2].split()]
on = [float(x) for x in sys.argv[3].split()]
mo, mn = statistics.median(off), statistics.median(on)
ranges = 5  # 5 children of the model, one forward range each per step
print(f"module ranges off: median {mo:.3f} cpu-ms/step  {off}")
print(f"module ranges on : median {mn:.3f} cpu-ms/step  {on}")
print(f"ratio on/off: {mn / mo:.3f}x; cost per range: {1000 * (mn - mo) / ranges:.1f} us ({ranges} ranges per step)")
PY
