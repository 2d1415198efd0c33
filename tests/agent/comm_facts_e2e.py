"""End to end: facts.collectives (src/agent/python/profile_train_comm.py) of a real 2-rank DDP job on CPU (gloo),
under `profile-train run -- torchrun --nproc-per-node 2 tests/agent/data/train_ddp_comm.py`, with no change to the
program. Per rank (rankN/report.json "facts", which the run passes through from the shim's facts file):
  - every step has exactly its collectives, in issue order: DDP's buffer broadcast (Float, Long), one "ddp_bucket"
    all_reduce per gradient bucket with the sizes DDP itself reports for that step's backward, then the program's
    all_gather_into_tensor, broadcast and async all_reduce; DDP's construction broadcast in step 0 and the
    closing barrier; kinds, dtypes, element counts and bytes as computed from the model;
  - seq strictly increasing on the group, and the same collective has the same seq on both ranks;
  - call_ns <= return_ns <= end_ns (sync CPU calls end at their return), call_ns in issue order;
  - the losses and final parameters are bit for bit those of the same job without profile-train, with no comm
    hook, with a user's hook registered after DDP's construction (it still runs, once per bucket, and its
    all_reduce is recorded with ddp_hook = its name) and with the builtin FP16_COMPRESS (run as default_hooks'
    fp16_compress_hook: Half buckets); and with 3 ranks, where a hook dividing instead of multiplying by the
    reciprocal would differ;
  - PROFILE_TRAIN_COLLECTIVES=0 records nothing.
usage: comm_facts_e2e.py PROFILE_TRAIN WORKDIR   (run with the venv's python; exit 77 without torch / torchrun)"""
import json
import os
import shutil
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "data", "train_ddp_comm.py")
STEPS = 4
HIDDEN = 256
BUCKET_CAP_MB = "0.1"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(cmd, cwd, env=None, timeout=300):
    """Runs cmd; a torchrun job whose gloo teardown aborted a rank after the program finished ("terminate called
    without an active exception": torchrun exits 1, `profile-train run` 4, with or without the shim) is run once
    more, and the first attempt's error lines are printed."""
    for attempt in (1, 2):
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                           env=dict(os.environ, **(env or {})))
        teardown = "terminate called" in p.stdout or "ChildFailedError" in p.stdout
        if p.returncode == 0 or attempt == 2 or "torchrun" not in " ".join(cmd) or not teardown:
            return p.returncode, p.stdout
        errors = [l for l in p.stdout.splitlines() if "terminate" in l or "Error" in l or "error" in l][:8]
        print("note: attempt 1 exited %d at the job's teardown, running it again: %s" % (p.returncode, errors),
              flush=True)
    return p.returncode, p.stdout


def error_lines(log):
    return "\n".join(l for l in log.splitlines()
                     if any(w in l for w in ("terminate", "Error", "error:", "Traceback", "Signal", "exitcode")))[:3000] + "\n"


def job(torchrun, out, nproc=2, hook="none", extra=()):
    return [torchrun, "--nproc-per-node", str(nproc), "--master-port", str(free_port()), PROGRAM,
            "--steps", str(STEPS), "--hidden", str(HIDDEN), "--bucket-cap-mb", BUCKET_CAP_MB, "--hook", hook,
            "--out", out] + list(extra)


def outputs(prefix, nproc):
    res = []
    for r in range(nproc):
        try:
            with open("%s.rank%d.json" % (prefix, r)) as fh:
                res.append(json.load(fh))
        except (OSError, ValueError):
            res.append(None)
    return res


def raw_facts(folder, rank):
    """The shim's facts file of `rank` in the run's capture folder (report.json keeps the instances' count only)."""
    cap = os.path.join(folder, "capture")
    for name in sorted(os.listdir(cap)) if os.path.isdir(cap) else []:
        if name.startswith("facts-") and name.endswith(".json"):
            with open(os.path.join(cap, name)) as fh:
                f = json.load(fh)
            if f.get("distributed", {}).get("rank") == rank:
                return f
    return None


def reports(folder, nproc):
    """Each rank's report.json, its facts.collectives replaced by the shim's own record (with the instances)."""
    res = []
    for r in range(nproc):
        try:
            with open(os.path.join(folder, "rank%d" % r, "report.json")) as fh:
                rep = json.load(fh)
        except (OSError, ValueError):
            res.append(None)
            continue
        raw = raw_facts(folder, r)
        c = rep.get("facts", {}).get("collectives")
        if c is not None and raw is not None and "collectives" in raw:
            check(c.get("instances_recorded") == len(raw["collectives"].get("instances", [])) and "instances" not in c,
                  "rank %d: report.json keeps the count of the shim's instances (%s), not the instances" % (
                      r, c.get("instances_recorded")))
            rep["facts"]["collectives"] = raw["collectives"]
        res.append(rep)
    return res


def check_sections(label, folder, world):
    """The analysis of the shim's records: each rank's collectives section and the job's matching."""
    reps = []
    for r in range(world):
        with open(os.path.join(folder, "rank%d" % r, "report.json")) as fh:
            reps.append(json.load(fh))
    for r, rep in enumerate(reps):
        c = rep.get("collectives") or {}
        check(c.get("timing") == "shim", "%s rank %d: collectives timed by the shim: %s" % (label, r, c.get("timing")))
        kinds = {row["kind"] for row in c.get("rows", [])}
        check({"all_reduce", "all_gather", "broadcast"} <= kinds, "%s rank %d: kinds %s" % (label, r, sorted(kinds)))
        check(all(row.get("group_size") == world for row in c.get("rows", []) if row["kind"] != "barrier"),
              "%s rank %d: every row over %d ranks" % (label, r, world))
        ar = [row for row in c.get("rows", []) if row["kind"] == "all_reduce" and row.get("dtype") == "float32"]
        check(ar and all(row.get("busbw_gbps") and row.get("bus_factor") == round(2.0 * (world - 1) / world, 6) for row in ar),
              "%s rank %d: float32 all_reduce rows with nccl-tests' factor 2(n-1)/n: %s" % (label, r, ar))
        check(rep["communication"]["measured"] is True and rep["communication"]["exposed_fraction"] is not None,
              "%s rank %d: communication measured from the shim's records" % (label, r))
    with open(os.path.join(folder, "job.json")) as fh:
        job = json.load(fh)
    jc = job.get("collectives") or {}
    check(jc.get("matched", 0) > 0 and jc.get("unmatched") == 0,
          "%s: every collective matched across the ranks: %s matched, %s unmatched" % (label, jc.get("matched"),
                                                                                     jc.get("unmatched")))
    check(str(jc.get("matched_by", "")).startswith("process group and sequence number"),
          "%s: matched by sequence number: %s" % (label, jc.get("matched_by")))
    check(all(len(row.get("wait_ms_by_rank", [])) == world for row in jc.get("rows", [])),
          "%s: a wait per rank in every row" % label)


def same_numbers(plain, shim, what):
    ok = all(a is not None and b is not None for a, b in zip(plain, shim))
    check(ok, "%s: both jobs wrote their losses" % what)
    if not ok:
        return
    for r, (a, b) in enumerate(zip(plain, shim)):
        check(a["losses"] == b["losses"], "%s rank %d: losses bit for bit: %s vs %s" % (what, r, a["losses"],
                                                                                     b["losses"]))
        check(a["params_sha256"] == b["params_sha256"], "%s rank %d: final parameters bit for bit" % (what, r))


def param_count(h):
    return (64 * h + h) + 2 * h + (h * h + h) + (h * 10 + 10)  # Linear, BatchNorm (weight, bias), Linear, Linear


def expected(out, world, hook):
    """[(step, op, kind, dtype, in_nelems, out_nelems, bytes, async, ddp_hook)] the program issues, in order."""
    h = HIDDEN
    exp = [(0, "_broadcast_coalesced", "broadcast", "Float", param_count(h) + 2 * h, param_count(h) + 2 * h,
            4 * (param_count(h) + 2 * h), False, None),
           (0, "_broadcast_coalesced", "broadcast", "Long", 1, 1, 8, False, None)]
    for s in range(1, STEPS + 1):
        exp.append((s, "_broadcast_coalesced", "broadcast", "Float", 2 * h, 2 * h, 8 * h, False, None))
        exp.append((s, "_broadcast_coalesced", "broadcast", "Long", 1, 1, 8, False, None))
        for numel, dtype in out["buckets"][s - 1]:
            if dtype != "float32":
                check(False, "DDP's bucket of step %d is float32: %s" % (s, dtype))
            if hook == "none":
                exp.append((s, "ddp_bucket", "all_reduce", "Float", numel, numel, 4 * numel, True, None))
            elif hook == "user":
                exp.append((s, "all_reduce", "all_reduce", "Float", numel, numel, 4 * numel, True, "user_hook"))
            else:
                exp.append((s, "all_reduce", "all_reduce", "Half", numel, numel, 2 * numel, True,
                            "fp16_compress_hook"))
        exp.append((s, "all_gather_into_tensor", "all_gather", "Float", 1, world, 4 * world, False, None))
        exp.append((s, "broadcast", "broadcast", "Long", 1, 1, 8, False, None))
        exp.append((s, "all_reduce", "all_reduce", "Double", 32, 32, 256, True, None))
    exp.append((STEPS, "barrier", "barrier", None, 0, 0, 0, False, None))
    return exp


def check_collectives(label, reps, outs, world, hook):
    ok = all(r is not None for r in reps) and all(o is not None for o in outs)
    check(ok, "%s: a report and the program's output per rank" % label)
    if not ok:
        return []
    seqs = []
    for rank, (rep, out) in enumerate(zip(reps, outs)):
        f = rep.get("facts") or {}
        c = f.get("collectives") or {}
        check(f.get("distributed", {}).get("rank") == rank, "%s: report %d is rank %d" % (label, rank, rank))
        check(not f.get("shim_errors"), "%s rank %d: no shim errors: %s" % (label, rank, f.get("shim_errors")))
        want_hooks = ["torch.distributed", "ddp"]
        check(c.get("hooks") == want_hooks, "%s rank %d: hooks %s" % (label, rank, c.get("hooks")))
        check(c.get("dropped") == 0 and c.get("complete") is True,
              "%s rank %d: dropped 0, complete: %s %s" % (label, rank, c.get("dropped"), c.get("complete")))
        check(not c.get("notes"), "%s rank %d: no notes: %s" % (label, rank, c.get("notes")))
        inst = c.get("instances") or []
        exp = expected(out, world, hook)
        got = [(i.get("step"), i.get("op"), i.get("kind"), i.get("dtype"), i.get("in_nelems"), i.get("out_nelems"),
                i.get("bytes"), i.get("async"), i.get("ddp_hook")) for i in inst]
        check(got == exp, "%s rank %d: the %d collectives in order (step, op, kind, dtype, in, out, bytes, async, "
              "ddp_hook)%s" % (label, rank, len(exp), "" if got == exp else
                               ": got %s\nwant %s" % (got, exp)))
        per_step = {}
        for g in got:
            per_step[g[0]] = per_step.get(g[0], 0) + 1
        want_counts = [2 + len(out["buckets"][s - 1]) + 3 + (1 if s == STEPS else 0) for s in range(1, STEPS + 1)]
        check([per_step.get(s, 0) for s in range(1, STEPS + 1)] == want_counts,
              "%s rank %d: per step buffer broadcasts + DDP buckets + direct calls: %s" % (
                  label, rank, [per_step.get(s, 0) for s in range(1, STEPS + 1)]))
        check(all(i.get("pg") == "0" and i.get("pg_desc") == "default_pg" and i.get("group_size") == world
                  and i.get("device") == "cpu" for i in inst),
              "%s rank %d: default group of %d, cpu" % (label, rank, world))
        s = [i.get("seq") for i in inst]
        check(all(isinstance(x, int) for x in s) and all(a < b for a, b in zip(s, s[1:])),
              "%s rank %d: seq strictly increasing: %s" % (label, rank, s))
        seqs.append(s)
        times_ok = all(isinstance(i.get("call_ns"), int) and isinstance(i.get("return_ns"), int)
                       and isinstance(i.get("end_ns"), int) and i["call_ns"] <= i["return_ns"] <= i["end_ns"]
                       for i in inst)
        check(times_ok, "%s rank %d: call_ns <= return_ns <= end_ns for every instance" % (label, rank))
        check(all(i.get("end_ns") == i.get("return_ns") for i in inst if not i.get("async")),
              "%s rank %d: a sync gloo call ends at its return" % (label, rank))
        calls = [i.get("call_ns") for i in inst]
        check(all(a <= b for a, b in zip(calls, calls[1:])), "%s rank %d: call_ns in issue order" % (label, rank))
    if len(seqs) == len(reps) and seqs:
        check(all(x == seqs[0] for x in seqs), "%s: the same seq for the same collective on every rank" % label)
        keys = [[(i["kind"], i["op"], i["seq"], i["in_nelems"], i["out_nelems"], i["bytes"], i["dtype"])
                 for i in rep["facts"]["collectives"]["instances"]] for rep in reps]
        check(all(k == keys[0] for k in keys), "%s: the ranks agree on every collective's kind, seq and size" % label)
    return seqs


def main():
    try:
        import torch  # noqa: F401
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_gloo_available():
            print("SKIP: torch without gloo")
            return 77
    except ImportError:
        print("SKIP: no torch in this python")
        return 77
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    if not os.path.exists(torchrun):
        print("SKIP: no torchrun next to " + sys.executable)
        return 77
    binary, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    for hook in ("none", "user", "fp16"):
        rc, log = run(job(torchrun, os.path.join(work, "plain-" + hook), hook=hook), work)
        check(rc == 0, "plain torchrun (hook %s) exit 0 (rc %d)%s" % (hook, rc, "" if rc == 0 else "\n" + log[-3000:]))
        folder = os.path.join(work, "run-" + hook)
        rc, log = run([binary, "run", "--out", folder, "--"] + job(torchrun, os.path.join(work, "shim-" + hook),
                                                                   hook=hook), work)
        check(rc == 0, "profile-train run (hook %s) exit 0 (rc %d)%s" % (hook, rc, "" if rc == 0 else
                                                                          "\n" + error_lines(log) + log[-3000:]))
        plain, shim = outputs(os.path.join(work, "plain-" + hook), 2), outputs(os.path.join(work, "shim-" + hook), 2)
        same_numbers(plain, shim, "hook " + hook)
        reps = reports(folder, 2)
        check_collectives("hook " + hook, reps, shim, 2, hook)
        if hook == "user" and all(o is not None for o in shim):
            for r, o in enumerate(shim):
                n = sum(len(b) for b in o["buckets"])
                check(o["hook_calls"] == n == plain[r]["hook_calls"],
                      "rank %d: the user's hook ran once per bucket, as without the shim: %s / %s / %s" % (
                          r, o["hook_calls"], n, plain[r]["hook_calls"]))
        if hook == "none" and reps[0] is not None:
            check_sections("hook none", folder, 2)

    # Off: PROFILE_TRAIN_COLLECTIVES=0 patches nothing and records nothing.
    folder = os.path.join(work, "run-off")
    rc, log = run([binary, "run", "--out", folder, "--"] + job(torchrun, os.path.join(work, "shim-off")), work,
                  env={"PROFILE_TRAIN_COLLECTIVES": "0"})
    check(rc == 0, "run with PROFILE_TRAIN_COLLECTIVES=0 exit 0 (rc %d)" % rc)
    for r, rep in enumerate(reports(folder, 2)):
        check(rep is not None and "collectives" not in rep.get("facts", {}) and rep["facts"].get("distributed"),
              "PROFILE_TRAIN_COLLECTIVES=0: rank %d has facts but no facts.collectives" % r)
    same_numbers(outputs(os.path.join(work, "plain-none"), 2), outputs(os.path.join(work, "shim-off"), 2),
                 "collectives off")

    # 3 ranks: the reducer multiplies by 1/3; a hook that divided by 3 would change the bits.
    rc, log = run(job(torchrun, os.path.join(work, "plain-3"), nproc=3), work)
    check(rc == 0, "plain torchrun, 3 ranks, exit 0 (rc %d)%s" % (rc, "" if rc == 0 else "\n" + log[-3000:]))
    folder = os.path.join(work, "run-3")
    rc, log = run([binary, "run", "--out", folder, "--"] + job(torchrun, os.path.join(work, "shim-3"), nproc=3), work)
    check(rc == 0, "profile-train run, 3 ranks, exit 0 (rc %d)%s" % (rc, "" if rc == 0 else "\n" + log[-3000:]))
    shim3 = outputs(os.path.join(work, "shim-3"), 3)
    same_numbers(outputs(os.path.join(work, "plain-3"), 3), shim3, "3 ranks")
    check_collectives("3 ranks", reports(folder, 3), shim3, 3, "none")
    check_sections("3 ranks", folder, 3)

    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
