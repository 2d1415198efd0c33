#!/usr/bin/env python3
"""Writes seed corpora for the fuzz targets of bench/fuzz: small valid native captures, the built-in rule
files and their expressions, and report.json files (from PROFILE_TRAIN=path/to/profile-train when given).
Usage: make_seeds.py TARGET OUT_DIR REPO_ROOT   (TARGET: native | rules | report_diff | nsys)"""
import glob
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile


def fnv1a32(b):
    """The chunk checksum of include/profile_train/format/native_format.h (64-bit words, then bytes)."""
    h, m = 14695981039346656037, (1 << 64) - 1
    i = 0
    while i + 8 <= len(b):
        h = ((h ^ struct.unpack_from("<Q", b, i)[0]) * 1099511628211) & m
        i += 8
    for c in b[i:]:
        h = ((h ^ c) * 1099511628211) & m
    return (h ^ (h >> 32)) & 0xFFFFFFFF


def chunk(ctype, payload):
    pad = (8 - len(payload) % 8) % 8
    return struct.pack("<IHHII", 0x4B4E4843, ctype, 0, len(payload), fnv1a32(payload)) + payload + b"\0" * pad


def record(kind, name=0, start=0, end=0, tid=0, corr=-1, value=0, x0=0, x1=0, device=-1, x2=0, a=0, b=0, c=0):
    return struct.pack("<BBBBIqqQqqIIiI", kind, a, b, c, name, start, end, tid, corr, value, x0, x1, device, x2)


def native_seed(n_steps, with_gpu):
    out = b"PTNATIVE" + struct.pack("<HHIqq", 1, 0, 32, 4242, 0)
    out += chunk(1, json.dumps({"pid": 4242, "process_name": "python", "flush_interval_ms": 50}).encode())
    strings = b""
    for sid, s in [(1, "ProfilerStep#1"), (2, "forward"), (3, "volta_sgemm_128x64_nn"), (4, "cudaLaunchKernel_v7000")]:
        e = s.encode()
        strings += struct.pack("<II", sid, len(e)) + e + b"\0" * ((4 - len(e) % 4) % 4)
    out += chunk(2, strings)
    recs = b""
    t = 1_000_000
    for i in range(n_steps):
        recs += record(1, name=1, start=t, end=t + 100_000, tid=7)
        recs += record(1, name=2, start=t + 10_000, end=t + 40_000, tid=7, x1=1)
        if with_gpu:
            recs += record(10, name=4, start=t + 40_000, end=t + 42_000, tid=7, corr=i + 1, value=4242)
            recs += record(6, name=3, start=t + 43_000, end=t + 90_000, tid=7, corr=i + 1, value=80, x0=256, device=0)
            recs += record(7, start=t + 5_000, end=t + 9_000, tid=7, value=1 << 20, a=1, b=1, c=3, device=0)
            recs += record(12, start=t + 1_000, value=1 << 20, device=0)
        t += 100_000
    out += chunk(3, recs)
    if with_gpu:
        out += chunk(5, json.dumps({"id": 0, "name": "GPU", "num_sms": 80, "total_memory_bytes": 1 << 34}).encode())
    status = {"written": len(recs) // 64, "dropped": 0, "complete": True, "cupti": {"state": "enabled"}}
    out += chunk(4, json.dumps(status).encode())
    return out


def nsys_seed(path, procs, inline):
    """A small Nsight Systems export (512-byte pages): kernels, copies, runtime calls and NVTX ranges of `procs`
    processes, names through StringIds or inline, with the ENUM tables of a current export."""
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    name = "TEXT" if inline else "INTEGER"
    db.executescript("""
        PRAGMA page_size = 512;
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
        CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
        CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, "end" INTEGER, deviceId INTEGER, contextId INTEGER,
          streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName %s, shortName %s,
          gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER,
          registersPerThread INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, "end" INTEGER, deviceId INTEGER, contextId INTEGER,
          streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER,
          srcKind INTEGER, dstKind INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, "end" INTEGER, deviceId INTEGER,
          contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, syncType INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, "end" INTEGER, globalTid INTEGER,
          correlationId INTEGER, nameId %s);
        CREATE TABLE NVTX_EVENTS (start INTEGER, "end" INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER,
          textId INTEGER, domainId INTEGER);
        INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2024.5.1'), ('EXPORT_SCHEMA_VERSION', '3.11.0');
        INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'),
          (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'), (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device');
        INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'),
          (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'), (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device');
        INSERT INTO StringIds VALUES (1, 'ncclDevKernel_AllReduce_Sum_f32'), (2, 'cudaLaunchKernel_v7000'),
          (3, 'ProfilerStep#1'), (4, 'cudaMemcpyAsync_v3020');
    """ % (name, name, name))
    k = lambda sid, text: text if inline else sid
    for p in range(procs):
        gpid = (1 << 48) | ((100 + p) << 24)
        gtid = gpid | (100 + p)
        for step in range(3):
            t0 = step * 10000
            db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL, 0)",
                       (t0, t0 + 9000, "ProfilerStep#%d, op_id = %d" % (step, step), gtid))
            db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL, 0)",
                       (t0 + 50, t0 + 300, "aten::mm, seq = 1, op_id = 9, sizes = [[8, 8], [8, 8]]", gtid))
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?)",
                       (t0 + 100, t0 + 120, gtid, step * 2 + 1, k(4, "cudaMemcpyAsync_v3020")))
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, 1, 7, ?, ?, 4096, 1, ?, 2)",
                       (t0 + 130, t0 + 400, p, step * 2 + 1, gpid, step % 2))
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?)",
                       (t0 + 200, t0 + 210, gtid, step * 2 + 2, k(2, "cudaLaunchKernel_v7000")))
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, 1, 7, ?, ?, ?, ?, 8, 1, 1, 256, 1, 1, 32, 0, 1024)",
                       (t0 + 500, t0 + 8000, p, step * 2 + 2, gpid, k(1, "ncclDevKernel_AllReduce_Sum_f32"),
                        k(1, "ncclDevKernel_AllReduce_Sum_f32")))
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?, ?, 0, 1, 7, 99, ?, 3)",
                       (t0 + 8000, t0 + 8100, gpid))
    db.commit()
    db.close()


def main():
    target, out_dir, root = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(out_dir, exist_ok=True)
    if target == "native":
        for i, (steps, gpu) in enumerate([(1, False), (3, True), (8, True)]):
            with open(os.path.join(out_dir, "seed_%d.ptrace" % i), "wb") as f:
                f.write(native_seed(steps, gpu))
    elif target == "rules":
        for p in sorted(glob.glob(os.path.join(root, "rules", "*.json"))):
            if p.endswith(".schema.json"):
                continue
            text = open(p, "rb").read()
            name = os.path.basename(p)
            open(os.path.join(out_dir, "rule_" + name), "wb").write(b"\0" + text)
            rule = json.loads(text)
            for k, e in [("when", rule.get("when")), ("share", rule.get("gain", {}).get("removable_share"))]:
                if isinstance(e, str):
                    open(os.path.join(out_dir, "expr_%s_%s" % (k, name)), "wb").write(b"\1" + e.encode())
    elif target == "report_diff":
        binary = os.environ.get("PROFILE_TRAIN", "")
        # PT_TRACES_DIR: the shared traces when this checkout is not beside them (a worktree elsewhere).
        traces_dir = os.environ.get("PT_TRACES_DIR", os.path.join(root, "..", "shared", "traces"))
        traces = sorted(glob.glob(os.path.join(traces_dir, "**", "*.json.gz"), recursive=True))
        traces = [t for t in traces if "_derived" not in t and os.path.getsize(t) < 40_000][:4]
        n = 0
        if binary and os.access(binary, os.X_OK):
            for t in traces:
                with tempfile.TemporaryDirectory() as d:
                    subprocess.run([binary, "analyze", t, "--format", "json", "--out", d, "-q"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
                    rp = os.path.join(d, "report.json")
                    if os.path.exists(rp):
                        open(os.path.join(out_dir, "report_%d.json" % n), "wb").write(open(rp, "rb").read())
                        n += 1
        open(os.path.join(out_dir, "minimal.json"), "w").write('{"schema_version": "1.0"}')
    elif target == "nsys":
        traces = os.environ.get("PT_TRACES_DIR", os.path.join(root, "..", "shared", "traces"))
        small = os.path.join(traces, "nsys", "healthy_1pct.sqlite")
        if os.path.exists(small) and os.path.getsize(small) <= 65536:
            shutil.copyfile(small, os.path.join(out_dir, "healthy_1pct.sqlite"))
        for i, (procs, inline) in enumerate([(1, False), (2, False), (2, True)]):
            nsys_seed(os.path.join(out_dir, "seed_%d.sqlite" % i), procs, inline)
    else:
        sys.exit("unknown target " + target)


if __name__ == "__main__":
    main()
