#!/usr/bin/env python3
"""Assertions of the GPU capture check on the raw native captures (src/agent/FORMAT.md), independent of the
analysis: a minimal reader of the format, then per-mode checks.

  check_capture.py OUT [--dry-run]

OUT holds one folder per mode (pageable/, pinned/), each written by `profile-train run --out`. With
--dry-run (a machine without a GPU, where train_cuda.py ran with --device cpu) the GPU checks are listed as
"n/a" and only what a CPU run can show is asserted: the steps were captured, the agent wrote its status and
said why CUPTI recorded nothing. Writes OUT/check.json and OUT/check.md; exit 0 when every check passed.
Standard library only.
"""
import glob
import json
import os
import struct
import sys

EVENT = struct.Struct("<BBBBIqqQqqIIiI")  # the 64-byte event record
CHUNK = struct.Struct("<IHHII")           # magic, type, flags, payload_bytes, checksum
CHUNK_MAGIC = 0x4B4E4843
KIND_RANGE, KIND_KERNEL, KIND_MEMCPY, KIND_RUNTIME = 1, 6, 7, 10
COPY_HTOD = 1
MEM_KIND = {0: "unknown", 1: "pageable", 2: "pinned", 3: "device", 4: "managed"}


def read_native(path):
    """(strings {id: text}, events [tuple], last status dict) of one .ptrace file."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:8] != b"PTNATIVE":
        raise ValueError("%s: not a native capture" % path)
    off = struct.unpack_from("<I", b, 12)[0]  # header_bytes
    strings, events, status = {}, [], {}
    while off + CHUNK.size <= len(b):
        magic, typ, _, n, _ = CHUNK.unpack_from(b, off)
        payload = b[off + CHUNK.size: off + CHUNK.size + n]
        if magic != CHUNK_MAGIC or len(payload) < n:
            break  # a file cut mid-chunk: keep what precedes it
        if typ == 2:
            i = 0
            while i + 8 <= n:
                sid, ln = struct.unpack_from("<II", payload, i)
                i += 8
                strings[sid] = payload[i:i + ln].decode("utf-8", "replace")
                i += ln + (4 - ln % 4) % 4
        elif typ == 3:
            events.extend(EVENT.iter_unpack(payload[:n - n % EVENT.size]))
        elif typ == 4:
            status = json.loads(payload)
        off += CHUNK.size + ((n + 7) & ~7)
    return strings, events, status


def summarize(mode_dir):
    r = {"files": 0, "kernels": 0, "h2d": 0, "h2d_src_kinds": {}, "steps": 0, "runtime_calls": 0,
         "cupti": None, "nvtx_attached": False}
    for path in sorted(glob.glob(os.path.join(mode_dir, "capture", "*.ptrace"))):
        r["files"] += 1
        strings, events, status = read_native(path)
        cupti = status.get("cupti")
        if cupti is not None and (r["cupti"] is None or cupti.get("state") == "enabled"):
            r["cupti"] = cupti
        r["nvtx_attached"] |= bool((status.get("nvtx") or {}).get("attached"))
        for ev in events:
            kind, a, src = ev[0], ev[1], ev[2]
            if kind == KIND_KERNEL:
                r["kernels"] += 1
            elif kind == KIND_RUNTIME:
                r["runtime_calls"] += 1
            elif kind == KIND_MEMCPY and a == COPY_HTOD:
                r["h2d"] += 1
                k = MEM_KIND.get(src, str(src))
                r["h2d_src_kinds"][k] = r["h2d_src_kinds"].get(k, 0) + 1
            elif kind == KIND_RANGE and strings.get(ev[4], "").startswith("ProfilerStep#"):
                r["steps"] += 1
    report = os.path.join(mode_dir, "report.json")
    if os.path.exists(report):
        with open(report) as f:
            j = json.load(f)
        r["report"] = {"verdict": (j.get("verdict") or {}).get("bottleneck"), "device": j.get("device"),
                       "h2d": ((j.get("gpu") or {}).get("memcpy") or {}).get("h2d"),
                       "steps": (j.get("steps") or {}).get("count"),
                       "gpu_capture": (j.get("source") or {}).get("gpu_capture_status")}
    return r


def checks_for(r, want_src, steps, dry_run):
    """[(name, passed or None for n/a)]."""
    state = (r["cupti"] or {}).get("state")
    gpu = [
        ("cupti enabled", state == "enabled"),
        ("kernels captured", r["kernels"] >= steps),
        ("runtime API calls captured", r["runtime_calls"] > 0),
        ("H2D copies captured", r["h2d"] >= steps),
        ("H2D source memory kind is %s" % want_src, r["h2d_src_kinds"].get(want_src, 0) >= steps),
    ]
    common = [
        ("a capture file was written", r["files"] >= 1),
        ("NVTX attached", r["nvtx_attached"]),
        ("steps captured", r["steps"] >= steps - 1),
    ]
    if dry_run:
        # Without a driver CUPTI never starts: the status must say so (not_initialized or disabled + reason).
        said_why = state in ("not_initialized", "disabled") and bool((r["cupti"] or {}).get("reason"))
        return common + [("CUPTI status explains why nothing was recorded", said_why)] + \
            [(name, None) for name, _ in gpu]
    return common + gpu


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    dry_run = "--dry-run" in argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = args[0]
    steps = int(os.environ.get("PT_CHECK_STEPS", "40"))
    results, ok = {}, True
    for mode in ("pageable", "pinned"):
        r = summarize(os.path.join(out, mode))
        r["checks"] = checks_for(r, mode, steps, dry_run)
        results[mode] = r
        for name, passed in r["checks"]:
            print("[gpu-check] %-8s %-48s %s" % (mode, name, "n/a (dry run)" if passed is None
                                                 else "PASS" if passed else "FAIL"))
            ok &= passed is not False
    with open(os.path.join(out, "check.json"), "w") as f:
        json.dump({"dry_run": dry_run, "modes": results}, f, indent=2, default=str)
    with open(os.path.join(out, "check.md"), "w") as md:
        md.write("# GPU capture check%s\n\n" % (" (dry run, no GPU)" if dry_run else ""))
        for mode, r in results.items():
            md.write("## %s\n\n" % mode)
            for name, passed in r["checks"]:
                md.write("- %s: %s\n" % (name, "n/a" if passed is None else "PASS" if passed else "FAIL"))
            md.write("- kernels %d, H2D copies %d (source kinds %s), steps %d, runtime calls %d, CUPTI %s\n\n" % (
                r["kernels"], r["h2d"], r["h2d_src_kinds"], r["steps"], r["runtime_calls"],
                json.dumps(r["cupti"])))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
