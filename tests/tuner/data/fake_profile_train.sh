#!/bin/sh
# Stand-in for `profile-train run --out DIR [opts] -- CMD...` used by the tuner's process-runner tests:
# runs CMD with PT_FAKE_OUT=DIR so the fake training script can write DIR/report.json.
[ "$1" = "run" ] || { echo "fake profile-train: only 'run'" >&2; exit 2; }
shift
out=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    *) shift ;;
  esac
done
shift
PT_FAKE_OUT="$out" exec "$@"
