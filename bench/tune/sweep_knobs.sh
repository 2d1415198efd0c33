#!/usr/bin/env bash
# Issue 26's sweep: the guided search over the zero-code knobs (threads, optimizer_impl, amp, channels_last where
# the model has a convolution) on the built-in `cnn` and `transformer` workloads and on the test programs written
# like common training scripts (a CNN with a DataLoader, a nanoGPT-like LM without one, a Lightning-like loop),
# each next to the grid over the same space, then a fresh re-run of each winner:
#   - Python programs: `profile-train run --apply OUT/apply.json` against a plain `run` of the unmodified program;
#   - workloads: the winner's command (tune.json `change.command`) against the baseline's.
# The grid's best is re-run the same way: its own figure is the best of single noisy runs (biased upwards).
# Interleaved, FRESH rounds; the ratio of mean step times is compared with the guided sweep's confirmed interval.
# Prints one markdown table per target and writes OUT_DIR/summary.md (commit it under bench/results/ with the date).
#
# usage: bench/tune/sweep_knobs.sh [BUILD_DIR] [OUT_DIR]
# env:   TARGETS (default "wl-cnn wl-transformer py-cnn py-lm py-lightning"), FRESH (interleaved rounds, 4),
#        KNOB_STEPS (steps of the Python programs, 48),
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
# Each knob's first value is the program's own setting (threads=0: torch's default, one per core), so the
# baseline is the unmodified program.
SPACE=(--knob threads=0,1 --knob optimizer_impl=default,foreach,fused --knob amp=off,bf16)
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
export KNOB_STEPS=${KNOB_STEPS:-48}

for t in $TARGETS; do
  # shellcheck disable=SC2207
  cmd=($(target_cmd "$t"))
  # shellcheck disable=SC2207
  space=($(target_space "$t"))
  mkdir -p "$OUT_DIR/$t"
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

  # Fresh re-runs, interleaved: the baseline, the guided winner and the grid's best (each sweep's winner as a user
  # would keep it: apply.json through `run --apply` for a Python program, the winner's command for the workload).
  mkdir -p "$OUT_DIR/$t/fresh"
  for r in $(seq 1 "$FRESH"); do
    echo "[$t] fresh round $r/$FRESH (load $(cut -d' ' -f1 /proc/loadavg))"
    for who in base guided grid; do
      d="$OUT_DIR/$t/fresh/$who-$r"
      if [ "${cmd[0]}" = "--" ]; then
        apply=()
        if [ "$who" != base ]; then
          [ -f "$OUT_DIR/$t/$who/apply.json" ] || continue
          apply=(--apply "$OUT_DIR/$t/$who/apply.json")
        fi
        "$PT" run "${apply[@]}" --out "$d" "${cmd[@]}" > "$d.log" 2>&1 || true
      else
        run_cmd=("$WL" --model "${cmd[3]}" "${cmd[@]:4}")
        if [ "$who" != base ]; then
          # tune.json's change.command names the workload by its file name: run this build's.
          # shellcheck disable=SC2207
          run_cmd=($("$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); c=(d.get("change") or {}).get("command") or []; print(" ".join([sys.argv[2]] + c[1:]) if c and not d["trials"][0]["is_best"] else "")' "$OUT_DIR/$t/$who/tune.json" "$WL"))
          [ ${#run_cmd[@]} -gt 0 ] || continue
        fi
        "$PT" run --out "$d" -- "${run_cmd[@]}" > "$d.log" 2>&1 || true
      fi
    done
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

print("| target | guided winner (trials, s) | guided: x gain [95% interval], claimed | loss vs baseline | grid best by its own runs (trials, s) | fresh: guided winner / baseline | inside the interval | fresh: grid best / baseline |")
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
        ls = "baseline kept" if gb.get("trial") == 1 else "-"
    def fresh(who):
        vals = [step_ms(f"{out}/{t}/fresh/{who}-{r}/report.json") for r in range(1, 100)
                if os.path.isdir(f"{out}/{t}/fresh/{who}-{r}")]
        return [x for x in vals if x]
    base = fresh("base")
    def vs_base(who):
        w = fresh(who)
        if not base or not w:
            return None, "no winner to re-run" if not w else "-"
        ratio = statistics.mean(base) / statistics.mean(w)
        return ratio, f"x{ratio:.2f} ({statistics.mean(w):.1f} vs {statistics.mean(base):.1f} ms/step, {len(w)}+{len(base)} runs)"
    g_ratio, g_text = vs_base("guided")
    d_ratio, d_text = vs_base("grid")
    inside = "-"
    if g_ratio is not None and sp.get("low") is not None:
        inside = "yes" if sp["low"] <= g_ratio <= sp["high"] else "no"
    print(f"| {t} | {cfg(gb.get('config'))} ({len(g['trials'])}, {secs('guided')}) | {gain} | {ls} | "
          f"{cfg(db.get('config'))}: {db.get('throughput', 0):.4g}/s (x{(d.get('speedup') or {}).get('value', 1):.2f} by its own runs; {len(d['trials'])}, {secs('grid')}) | {g_text} | {inside} | {d_text} |")
PY
