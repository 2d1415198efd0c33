#!/bin/sh
# A fake training command: step time = 10 ms + 1 ms per sample / (1 + num_workers from the shim overrides).
# Batch > 256 prints a CUDA OOM and fails; an odd batch crashes; batch 7 hangs; batch 254 writes a report.json
# that is not JSON, batch 252 one whose steps.count is a string.
bs="$1"
case "$PROFILE_TRAIN_OVERRIDES" in
  *'"dataloader.num_workers":'*) w=$(printf '%s' "$PROFILE_TRAIN_OVERRIDES" | sed 's/.*"dataloader.num_workers":\([0-9]*\).*/\1/') ;;
  *) w=0 ;;
esac
if [ "$bs" -eq 7 ]; then sleep 60; fi
if [ "$bs" -gt 256 ]; then echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB" >&2; exit 1; fi
if [ $((bs % 2)) -eq 1 ]; then echo "ValueError: odd batch size $bs" >&2; exit 1; fi
step=$(awk -v b="$bs" -v w="$w" 'BEGIN { printf "%.6f", 10 + b / (1 + w) }')
if [ "$bs" -eq 254 ]; then printf '{"steps": ' > "$PT_FAKE_OUT/report.json"; exit 0; fi
if [ "$bs" -eq 252 ]; then
  printf '{"schema_version":"1.0","steps":{"count":"5","mean_ms":30}}\n' > "$PT_FAKE_OUT/report.json"; exit 0
fi
printf '{"schema_version":"1.0","steps":{"count":5,"mean_ms":%s},"facts":{"dataloader":{"batch_size":%s}}}\n' "$step" "$bs" > "$PT_FAKE_OUT/report.json"
echo "fake training done"
