#!/usr/bin/env bash
# PNG screenshot of a report/diff HTML page with headless Chromium (Debian package `chromium`).
# Usage: bench/report/screenshot.sh REPORT.html OUT.png [WIDTHxHEIGHT]   (default 1400x3200)
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 REPORT.html OUT.png [WIDTHxHEIGHT]" >&2
  exit 2
fi
html=$(realpath "$1")
out=$(realpath -m "$2")
size=${3:-1400x3200}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z "$browser" ]]; then
  echo "$0: chromium not found (apt-get install chromium)" >&2
  exit 2
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
sandbox=()
[[ $(id -u) -eq 0 ]] && sandbox=(--no-sandbox)
timeout 120 "$browser" --headless "${sandbox[@]}" --disable-gpu --disable-background-networking --no-first-run \
  --hide-scrollbars --user-data-dir="$profile" --window-size="${size/x/,}" --screenshot="$out" \
  "file://$html" >/dev/null 2>&1
echo "$out"
