#!/bin/sh
# A fake training command that no knob changes: a first step of 3-7 s (compile-like), then 19 steps of about
# 50 ms. The first 3 runs of a session (counted in the file $PT_FAKE_STATE) are 1.7x slower: the machine was
# loaded while the baseline's repeats ran. Writes $PT_FAKE_OUT/report.json with steps.per_step.
n=$(( $(cat "$PT_FAKE_STATE" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$PT_FAKE_STATE"
awk -v n="$n" 'BEGIN {
  srand(n); f = (n <= 3) ? 1.7 : 1.0; first = 3000 + 4000 * rand(); sum = first
  printf "{\"schema_version\":\"1.0\",\"steps\":{\"count\":20,\"per_step_complete\":true,\"per_step\":[{\"duration_ms\":%.3f}", first
  for (i = 1; i < 20; i++) { d = 50 * f * (0.98 + 0.04 * rand()); sum += d; printf ",{\"duration_ms\":%.3f}", d }
  printf "],\"mean_ms\":%.3f},\"facts\":{\"dataloader\":{\"batch_size\":16}}}\n", sum / 20
}' > "$PT_FAKE_OUT/report.json"
echo "fake training done"
