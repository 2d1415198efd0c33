#!/usr/bin/env python3
"""Runs the workload scenarios of bench/scenarios/*.json under `profile-train run` and scores the diagnosis.

Each scenario plants one bottleneck in `profile-train-workload` and names the expected verdict and first
recommendation. This driver runs every scenario the machine can show (scenarios with "needs_gpu": true are
skipped without a GPU unless --all is given; then they run but are not scored), reads the report.json that
`run` wrote, and prints a table plus the accuracy. A scenario's optional "fix" block is run as a second
trial (its "workload_args" replace the scenario's flags of the same name, its "remove_flags" drop flags) and
checked against its expectations: "expect_data_wait_reduction_min" (e.g. --workers 2 removes at least half of
the measured data wait) and "expect_speedup_min" (samples/s after / before). A fix with "needs_gpu": true runs
only on a GPU; fixes of unscored scenarios do not run. "gpu_workload_args" are added on a GPU machine only.

Standard library only. Exit code: 0 done (or all scored scenarios right with --strict), 1 a scored miss
with --strict, 2 bad usage or missing binaries.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# Workload flags that take no value.
BOOL_FLAGS = {"--pageable-h2d", "--host-sync", "--tiny", "--cpu-tensors", "--float64", "--cpu-normalize"}


def parse_flags(args):
    """['--a', '1', '--b'] -> [('--a', '1'), ('--b', None)] (order kept)."""
    out, i = [], 0
    while i < len(args):
        flag = args[i]
        if flag in BOOL_FLAGS or i + 1 >= len(args) or args[i + 1].startswith("--"):
            out.append((flag, None))
            i += 1
        else:
            out.append((flag, args[i + 1]))
            i += 2
    return out


def merge_flags(base, override, remove=()):
    """Flags of `override` replace those of `base` with the same name; new ones are appended; flags named in
    `remove` are dropped from `base` first."""
    merged = [(f, v) for f, v in parse_flags(base) if f not in set(remove)]
    for flag, value in parse_flags(override):
        for k, (f, _) in enumerate(merged):
            if f == flag:
                merged[k] = (flag, value)
                break
        else:
            merged.append((flag, value))
    out = []
    for f, v in merged:
        out.append(f)
        if v is not None:
            out.append(v)
    return out


def gpu_name():
    """Name of GPU 0, or None when this machine has no usable NVIDIA GPU."""
    if shutil.which("nvidia-smi"):
        try:
            r = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=30)
            if r.returncode == 0 and r.stdout.strip():
                return r.stdout.strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


def load_scenarios(names):
    scenarios = []
    for path in sorted(glob.glob(os.path.join(HERE, "*.json"))):
        with open(path) as f:
            s = json.load(f)
        if s.get("format_version") != 1:
            sys.exit("run_scenarios: %s: unknown format_version %r" % (path, s.get("format_version")))
        if names and s["name"] not in names:
            continue
        scenarios.append(s)
    if names and len(scenarios) != len(set(names)):
        found = {s["name"] for s in scenarios}
        sys.exit("run_scenarios: unknown scenario(s): %s" % ", ".join(sorted(set(names) - found)))
    return scenarios


def run_trial(args, name, workload_args, out_root):
    """One `profile-train run` of the workload. Returns a dict with the report and the workload result."""
    out_dir = os.path.join(out_root, name)
    os.makedirs(out_dir, exist_ok=True)
    result_path = os.path.join(out_dir, "workload-result.json")
    for stale in ("report.json", "workload-result.json"):
        if os.path.exists(os.path.join(out_dir, stale)):
            os.remove(os.path.join(out_dir, stale))
    cmd = [args.profile_train, "run", "--out", out_dir] + args.run_arg + ["--", args.workload] + \
        workload_args + ["--result", result_path]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    wall = time.monotonic() - t0
    with open(os.path.join(out_dir, "run.log"), "w") as f:
        f.write("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr)
    trial = {"name": name, "command": cmd, "exit_code": proc.returncode, "wall_s": round(wall, 2),
             "out_dir": out_dir, "report": None, "result": None}
    try:
        with open(os.path.join(out_dir, "report.json")) as f:
            trial["report"] = json.load(f)
    except (OSError, ValueError):
        pass
    try:
        with open(result_path) as f:
            trial["result"] = json.load(f)
    except (OSError, ValueError):
        pass
    if trial["report"] is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        trial["error"] = "no report.json (exit %d): %s" % (proc.returncode, " | ".join(tail))
    return trial


def get(d, *path):
    for p in path:
        if isinstance(d, dict) and p in d:
            d = d[p]
        elif isinstance(d, list) and isinstance(p, int) and 0 <= p < len(d):
            d = d[p]
        else:
            return None
    return d


def data_wait_ms(trial):
    """(from the workload's own step timing, from the report's breakdown) in ms per step."""
    own = get(trial, "result", "phase_ms", "data_wait")
    dl, mean = get(trial, "report", "breakdown", "data_loading"), get(trial, "report", "steps", "mean_ms")
    rep = dl * mean if isinstance(dl, (int, float)) and isinstance(mean, (int, float)) else None
    return own, rep


def accuracy(rows):
    """{"verdict": [right, scored], "first_recommendation": [...], "fixes": [...]} over finished rows."""
    def count(values):
        values = [v for v in values if v is not None]
        return [sum(1 for v in values if v), len(values)]
    done = [r for r in rows if "status" not in r]
    return {"verdict": count(r["verdict_ok"] for r in done),
            "first_recommendation": count(r["first_ok"] for r in done),
            "fixes": count(r["fix"]["ok"] for r in done if "fix" in r)}


def summary_markdown(summary):
    """The summary as an accuracy line and a Markdown table (what bench/gpu/run_all.sh puts in SUMMARY.md)."""
    a = summary["accuracy"]
    lines = ["accuracy: verdict %d/%d, first recommendation %d/%d, fixes %d/%d%s" % tuple(
                 a["verdict"] + a["first_recommendation"] + a["fixes"] +
                 ["" if summary["complete"] else " (cut short: partial)"]), "",
             "| scenario | verdict (expected) | first fix (expected) | samples/s | fix trial |",
             "|---|---|---|---|---|"]
    for r in summary["scenarios"]:
        if "status" in r:
            lines.append("| %s | %s | | | |" % (r["name"], r["status"]))
            continue
        f = r.get("fix")
        fix = "" if not f else "x%s → %s%s" % (fmt(f["speedup"], "%.2f"), f["verdict_after"],
                                               "" if f["ok"] is None else (" ok" if f["ok"] else " MISS"))
        lines.append("| %s | %s (%s) | %s (%s) | %s | %s |" % (r["name"], r["verdict"], r["expected_verdict"],
                                                            r["first"], r["expected_first"],
                                                            fmt(r["samples_per_s"]), fix))
    return "\n".join(lines) + "\n"


def write_summary(out_root, gpu, rows, complete):
    """summary.json and summary.md, rewritten after every scenario so that a run cut short keeps what it
    measured."""
    summary = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "machine": platform.node(), "platform": platform.platform(), "gpu": gpu,
               "complete": complete, "accuracy": accuracy(rows), "scenarios": rows}
    for name, text in (("summary.json", json.dumps(summary, indent=2)), ("summary.md", summary_markdown(summary))):
        tmp = os.path.join(out_root, name + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(out_root, name))


def fmt(x, pattern="%.1f"):
    return "-" if x is None else pattern % x


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(REPO, "build"),
                    help="build folder holding profile-train and profile-train-workload (default: build/)")
    ap.add_argument("--out", default=None, help="output folder (default: /tmp/pt-scenarios-<time>)")
    ap.add_argument("--only", nargs="*", default=[], help="scenario names to run")
    ap.add_argument("--all", action="store_true", help="also run needs_gpu scenarios without a GPU (not scored)")
    ap.add_argument("--steps", default="20", help="measured workload steps unless a scenario sets --steps")
    ap.add_argument("--warmup", default="3", help="workload warm-up steps unless a scenario sets --warmup")
    ap.add_argument("--workload-arg", action="append", default=[],
                    help="extra workload flag(s) for every scenario, e.g. --workload-arg=--threads --workload-arg=1")
    ap.add_argument("--run-arg", action="append", default=[], help="extra `profile-train run` option(s)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per trial")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a scored scenario is wrong")
    args = ap.parse_args()

    args.profile_train = os.path.join(args.build, "profile-train")
    args.workload = os.path.join(args.build, "profile-train-workload")
    for exe in (args.profile_train, args.workload):
        if not os.access(exe, os.X_OK):
            print("run_scenarios: %s is missing (build it, or pass --build)" % exe, file=sys.stderr)
            return 2
    gpu = gpu_name()
    out_root = args.out or "/tmp/pt-scenarios-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    os.makedirs(out_root, exist_ok=True)
    print("scenarios: machine %s, GPU: %s, output %s" % (platform.node(), gpu or "none", out_root))

    rows = []
    for s in load_scenarios(args.only):
        scored = gpu is not None or not s["needs_gpu"]
        if not scored and not args.all:
            rows.append({"name": s["name"], "needs_gpu": True, "status": "skipped (needs a GPU)"})
            continue
        expected = s["expected"] if gpu is not None else s.get("expected_cpu", s["expected"])
        defaults = ["--steps", args.steps, "--warmup", args.warmup] + args.workload_arg
        wargs = merge_flags(defaults, s["workload_args"])
        if gpu is not None and s.get("gpu_workload_args"):
            wargs = merge_flags(wargs, s["gpu_workload_args"])
        trial = run_trial(args, s["name"], wargs, out_root)
        verdict = get(trial, "report", "verdict", "bottleneck")
        first = get(trial, "report", "recommendations", 0, "id")
        row = {"name": s["name"], "needs_gpu": s["needs_gpu"], "scored": scored,
               "expected_verdict": expected["verdict"], "verdict": verdict,
               "expected_first": expected.get("first_recommendation"), "first": first,
               "recommendations": [r.get("id") for r in (get(trial, "report", "recommendations") or [])],
               "samples_per_s": get(trial, "result", "samples_per_s"),
               "step_ms_median": get(trial, "result", "step_ms", "median"),
               "data_wait_fraction": get(trial, "result", "data_wait_fraction"),
               "breakdown": get(trial, "report", "breakdown"),
               "exit_code": trial["exit_code"], "wall_s": trial["wall_s"], "out_dir": trial["out_dir"]}
        if "error" in trial:
            row["error"] = trial["error"]
        row["verdict_ok"] = verdict == expected["verdict"] if scored else None
        row["first_ok"] = (first == expected["first_recommendation"]) if scored and \
            expected.get("first_recommendation") is not None else None
        fix_spec = s.get("fix")
        if fix_spec and scored and (gpu is not None or not fix_spec.get("needs_gpu", False)) and \
                trial["report"] is not None:
            fix = run_trial(args, s["name"] + "-fix",
                            merge_flags(wargs, fix_spec.get("workload_args", []), fix_spec.get("remove_flags", [])),
                            out_root)
            base_own, base_rep = data_wait_ms(trial)
            fix_own, fix_rep = data_wait_ms(fix)
            red = (1.0 - fix_own / base_own) if base_own and fix_own is not None else None
            red_rep = (1.0 - fix_rep / base_rep) if base_rep and fix_rep is not None else None
            before, after = row["samples_per_s"], get(fix, "result", "samples_per_s")
            speedup = after / before if before and after is not None else None
            need_red = fix_spec.get("expect_data_wait_reduction_min")
            need_speed = fix_spec.get("expect_speedup_min")
            checks = []
            if need_red is not None:
                checks.append(red is not None and red >= need_red)
            if need_speed is not None:
                checks.append(speedup is not None and speedup >= need_speed)
            row["fix"] = {"workload_args": fix_spec.get("workload_args", []),
                          "remove_flags": fix_spec.get("remove_flags", []),
                          "data_wait_ms": {"before": base_own, "after": fix_own},
                          "data_wait_ms_from_report": {"before": base_rep, "after": fix_rep},
                          "reduction": red, "reduction_from_report": red_rep, "expected_min": need_red,
                          "samples_per_s": {"before": before, "after": after},
                          "speedup": speedup, "expected_speedup_min": need_speed,
                          "verdict_after": get(fix, "report", "verdict", "bottleneck"),
                          "first_after": get(fix, "report", "recommendations", 0, "id"),
                          "ok": all(checks) if checks else None}
        rows.append(row)
        write_summary(out_root, gpu, rows, complete=False)
        print("  %-17s %s / %s%s" % (s["name"], verdict or "-", first or "-",
                                    "" if "fix" not in row else "; fix x%s" % fmt(row["fix"]["speedup"], "%.2f")),
              flush=True)

    # Table
    head = "%-17s %-4s %-32s %-44s %10s %8s" % ("scenario", "gpu", "verdict (expected)", "first fix (expected)",
                                                "samples/s", "wait")
    print(head)
    print("-" * len(head))
    for r in rows:
        if "status" in r:
            print("%-17s %-4s %s" % (r["name"], "yes", r["status"]))
            continue
        mark = lambda ok: "" if ok is None else (" ok" if ok else " MISS")
        verdict = "%s (%s)%s" % (r["verdict"] or "-", r["expected_verdict"], mark(r["verdict_ok"]))
        first = "%s (%s)%s" % (r["first"] or "-", r["expected_first"] or "any", mark(r["first_ok"]))
        print("%-17s %-4s %-32s %-44s %10s %7s%%" % (r["name"], "yes" if r["needs_gpu"] else "no", verdict, first,
                                                     fmt(r["samples_per_s"]),
                                                     fmt(None if r["data_wait_fraction"] is None
                                                         else 100 * r["data_wait_fraction"])))
        if r.get("error"):
            print("    error: " + r["error"])
        if not r["scored"]:
            print("    (not scored: needs a GPU to show its bottleneck)")
        if "fix" in r:
            f = r["fix"]
            change = " ".join(["without " + x for x in f["remove_flags"]] + f["workload_args"])
            parts = ["samples/s %s -> %s (x%s%s)" % (fmt(f["samples_per_s"]["before"]), fmt(f["samples_per_s"]["after"]),
                                                     fmt(f["speedup"], "%.2f"),
                                                     "" if f["expected_speedup_min"] is None
                                                     else ", need >= %s" % f["expected_speedup_min"])]
            if f["expected_min"] is not None or (f["data_wait_ms"]["before"] or 0) > 0:
                parts.append("data wait %s -> %s ms/step (report: %s -> %s), reduction %s%s" % (
                    fmt(f["data_wait_ms"]["before"]), fmt(f["data_wait_ms"]["after"]),
                    fmt(f["data_wait_ms_from_report"]["before"]), fmt(f["data_wait_ms_from_report"]["after"]),
                    fmt(f["reduction"], "%.2f"),
                    "" if f["expected_min"] is None else " (need >= %s)" % f["expected_min"]))
            print("    fix [%s]: %s; then %s / %s%s" % (change, "; ".join(parts), f["verdict_after"] or "-",
                                                        f["first_after"] or "-", mark(f["ok"])))
    acc = accuracy(rows)
    print("accuracy: verdict %d/%d, first recommendation %d/%d, fixes %d/%d" %
          tuple(acc["verdict"] + acc["first_recommendation"] + acc["fixes"]))
    write_summary(out_root, gpu, rows, complete=True)
    print("summary: " + os.path.join(out_root, "summary.json"))
    missed = any(right < scored for right, scored in acc.values())
    return 1 if (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
