#!/usr/bin/env bash
# Issue 26's sweep: the guided search over the zero-code knobs (threads, optimizer_impl, amp, channels_last where
# the model has a convolution) on the built-in `cnn` and `transformer` workloads and on the test programs written
# like common training scripts (a CNN with a DataLoader, a nanoGPT-like LM without one, a Lightning-like loop),
# each next to the grid over the same space, then a fresh re-run of each winner:
#   - Python programs: `profile-train run --apply OUT/apply.json` against a plain `run` of the unmodified program;
#   - workloads: the winner's command (tune.json `change.command`) against the baseline's.
# Interleaved, FRESH runs each; the ratio of mean step times is compared with the guided sweep's confirmed interval.
# Prints one markdown table per target and writes OUT_DIR/summary.md (commit it under bench/results/ with the date).
#
# usage: bench/tune/sweep_knobs.sh [BUILD_DIR] [OUT_DIR]
# env:   TARGETS (default "wl-cnn wl-transformer py-cnn py-lm py-lightning"), FRESH (interleaved re-runs each, 4),
#        MAX_TRIALS (guided, 8), PYTHON (default .venv/bin/python)
# The machine must be quiet: tune's load rule leaves out pairs measured under a changing load, and a busy
# machine makes every figure here worthless. The load average is printed with each target.
set -euo pipefail
BUILD_DIR=${1:-build}
OUT_DIR=${2:-$(mktemp -d /tmp/pt-sweep-knobs.XXXXXX)}
mkdir -p "$OUT_DIR"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PT="$BUILD_DIR/profile-train"
WL="$BUILD_DIR/profile-train-workload"
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PT" ] || { echo "no $PT (build the profile-train target first)" >&2; exit 2; }
TARGETS=${TARGETS:-"wl-cnn wl-transformer py-cnn py-lm py-lightning"}
FRESH=${FRESH:-4}
MAX_TRIALS=${MAX_TRIALS:-8}
DATA="$ROOT/tests/agent/data"

# The same space for guided and grid: the knobs an unmodified program gets without code (compile is left out:
# TorchInductor's first compile of each trial costs tens of seconds on this CPU and is not in any default space).
SPACE=(--knob threads=1,2 --knob optimizer_impl=default,foreach,fused --knob amp=off,bf16)
COMMON=(--trial-timeout 300 --quiet)

target_cmd() {  # the program after `--`, or the workload flags after --workload
  case $1 in
    wl-cnn) echo "--workload-binary $WL --workload cnn --steps 6 --warmup 2 --device cpu --seed 0" ;;
    wl-transformer) echo "--workload-binary $WL --workload transformer --steps 6 --warmup 2 --device cpu --seed 0" ;;
    py-cnn) echo "-- $PYTHON $DATA/knob_cnn.py" ;;
    py-lm) echo "-- $PYTHON $DATA/knob_lm.py" ;;
    py-lightning) echo "-- $PYTHON $DATA/knob_lightning_like.py" ;;
    *) echo "unknown target $1" >&2; exit 2 ;;
  esac
}
target_space() {
  case $1 in
    wl-cnn | py-cnn) echo "${SPACE[*]} --knob channels_last=0,1" ;;
    *) echo "${SPACE[*]}" ;;
  esac
}

echo "machine: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "out:     $OUT_DIR"
export KNOB_STEPS=${KNOB_STEPS:-16}

for t in $TARGETS; do
  # shellcheck disable=SC2207
  cmd=($(target_cmd "$t"))
  # shellcheck disable=SC2207
  space=($(target_space "$t"))
  for strategy in guided grid; do
    extra=(--repeats 2 --baseline-repeats 3 --confirm-repeats 4)
    [ "$strategy" = guided ] && extra+=(--max-trials "$MAX_TRIALS")
    [ "$strategy" = grid ] && extra=(--repeats 1 --baseline-repeats 2 --confirm-repeats 0)
    start=$(date +%s)
    echo "[$t] $strategy (load $(cut -d' ' -f1 /proc/loadavg))"
    "$PT" tune --strategy "$strategy" "${space[@]}" "${extra[@]}" "${COMMON[@]}" --out "$OUT_DIR/$t/$strategy" \
      "${cmd[@]}" > "$OUT_DIR/$t/$strategy.log" 2>&1 ||
      { echo "  tune failed: $(tail -1 "$OUT_DIR/$t/$strategy.log")" >&2; }
    echo $(($(date +%s) - start)) > "$OUT_DIR/$t/$strategy.seconds"
  done

  # Fresh re-runs of the guided winner against the baseline, interleaved.
  apply="$OUT_DIR/$t/guided/apply.json"
  mkdir -p "$OUT_DIR/$t/fresh"
  winner_cmd=()
  if [ "${cmd[0]}" != "--" ] && [ -f "$OUT_DIR/$t/guided/tune.json" ]; then
    # shellcheck disable=SC2207
    winner_cmd=($("$PYTHON" -c 'import json,sys; c=(json.load(open(sys.argv[1])).get("change") or {}).get("command"); print(" ".join(c) if c else "")' "$OUT_DIR/$t/guided/tune.json"))
  fi
  for r in $(seq 1 "$FRESH"); do
    echo "[$t] fresh pair $r/$FRESH (load $(cut -d' ' -f1 /proc/loadavg))"
    if [ "${cmd[0]}" = "--" ]; then
      "$PT" run --out "$OUT_DIR/$t/fresh/base-$r" "${cmd[@]}" > "$OUT_DIR/$t/fresh/base-$r.log" 2>&1 || true
      if [ -f "$apply" ]; then
        "$PT" run --apply "$apply" --out "$OUT_DIR/$t/fresh/win-$r" "${cmd[@]}" > "$OUT_DIR/$t/fresh/win-$r.log" 2>&1 || true
      fi
    else
      # The workload's baseline command: the binary and the flags after --workload.
      base=("$WL" --model "${cmd[3]}" "${cmd[@]:4}")
      "$PT" run --out "$OUT_DIR/$t/fresh/base-$r" -- "${base[@]}" > "$OUT_DIR/$t/fresh/base-$r.log" 2>&1 || true
      if [ ${#winner_cmd[@]} -gt 0 ]; then
        "$PT" run --out "$OUT_DIR/$t/fresh/win-$r" -- "${winner_cmd[@]}" > "$OUT_DIR/$t/fresh/win-$r.log" 2>&1 || true
      fi
    fi
  done
done

"$PYTHON" - "$OUT_DIR" $TARGETS <<'PY' | tee "$OUT_DIR/summary.md"
import json, os, statistics, sys
out, targets = sys.argv[1], sys.argv[2:]

def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception:
        return None

def cfg(c):
    return ", ".join(f"{k}={v}" for k, v in sorted((c or {}).items())) or "-"

def step_ms(p):
    r = load(p)
    try:
        return r["steps"]["mean_ms"]
    except Exception:
        return None

print("| target | guided winner (trials, s) | guided: x gain [95% interval], claimed | loss vs baseline | grid best (trials, s) | guided's pick in the grid / grid best | fresh re-run: winner/baseline speed (n) | inside the interval |")
print("|---|---|---|---|---|---|---|---|")
for t in targets:
    g, d = load(f"{out}/{t}/guided/tune.json"), load(f"{out}/{t}/grid/tune.json")
    if g is None or d is None:
        print(f"| {t} | tune failed (see {t}/*.log) | | | | | | |")
        continue
    secs = lambda s: open(f"{out}/{t}/{s}.seconds").read().strip()
    gb, db = g.get("best") or {}, d.get("best") or {}
    sp = g.get("speedup") or {}
    gain = f"x{sp.get('value', 1):.2f}"
    if sp.get("low") is not None:
        gain += f" [{sp['low']:.2f}-{sp['high']:.2f}]"
    gain += ", claimed" if sp.get("claimed") else ", not claimed"
    loss = (g.get("quality") or {}).get("loss") or {}
    if loss.get("trial_mean") is not None and loss.get("baseline_mean") is not None:
        ls = f"{loss['trial_mean']:.4g} vs {loss['baseline_mean']:.4g}" + f" ({loss.get('status')})"
    else:
        ls = "baseline kept" if gb.get("trial") == 0 else "-"
    same = [x for x in d["trials"] if x["config"] == gb.get("config") and x.get("throughput")]
    pick = f"{same[0]['throughput'] / db['throughput']:.3f}" if same and db.get("throughput") else "-"
    base = [step_ms(f"{out}/{t}/fresh/base-{r}/report.json") for r in range(1, 100) if os.path.isdir(f"{out}/{t}/fresh/base-{r}")]
    win = [step_ms(f"{out}/{t}/fresh/win-{r}/report.json") for r in range(1, 100) if os.path.isdir(f"{out}/{t}/fresh/win-{r}")]
    base, win = [x for x in base if x], [x for x in win if x]
    fresh, inside = "no winner to re-run", "-"
    if base and win:
        ratio = statistics.mean(base) / statistics.mean(win)
        fresh = f"x{ratio:.2f} ({statistics.mean(win):.1f} vs {statistics.mean(base):.1f} ms/step, {len(win)}+{len(base)})"
        if sp.get("low") is not None:
            inside = "yes" if sp["low"] <= ratio <= sp["high"] else "no"
    print(f"| {t} | {cfg(gb.get('config'))} ({len(g['trials'])}, {secs('guided')}) | {gain} | {ls} | "
          f"{cfg(db.get('config'))} at {db.get('throughput', 0):.4g} ({len(d['trials'])}, {secs('grid')}) | {pick} | {fresh} | {inside} |")
PY
