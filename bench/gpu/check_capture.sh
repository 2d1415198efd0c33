#!/usr/bin/env bash
# GPU capture check (one command, < 8 minutes on a GPU machine):
#   bash bench/gpu/check_capture.sh
# Builds profile-train + the agent against this machine's CUDA toolkit and Python/torch (headers of
# nlohmann-json, CLI11 and gtest may come in a carried .deps/ folder), runs a real CUDA training loop under
# `profile-train run` twice (pageable and pinned host memory) and asserts from the raw native capture that
# kernels, H2D copies with their source memory kinds, and steps were captured, and that CUPTI was enabled.
# Results go to $OUT (default ./out/gpu-check): check.md, check.json, the reports and the captures.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-$root/out/gpu-check}"
PY="${PT_PYTHON:-$(command -v python3)}"
build="${BUILD_DIR:-$root/build-gpu}"
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
echo "[gpu-check] $(date -u +%FT%TZ) on $(hostname); python $PY"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpu', torch.cuda.get_device_name())"

prefix="$root/.deps"
[ -d "$prefix" ] || prefix=""
if [ -z "${PT_SKIP_BUILD:-}" ]; then  # run_all.sh builds once and sets PT_SKIP_BUILD
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPT_PYTHON="$PY" \
    -DPT_WITH_CUPTI=ON -DPT_WITH_TORCH=OFF -DPT_BUILD_TESTS=OFF -DPT_BUILD_BENCH=OFF \
    ${prefix:+-DCMAKE_PREFIX_PATH="$prefix"} | tail -8
  ninja -C "$build" -j"$(nproc)" profile-train profile_train_agent
fi

status=0
for mode in pageable pinned; do
  flag=""; [ "$mode" = pinned ] && flag="--pin-memory"
  rm -rf "$OUT/$mode"
  set +e
  timeout 240 "$build/profile-train" run --out "$OUT/$mode" -- "$PY" "$root/tests/agent/data/train_cuda.py" \
    --steps 40 $flag
  rc=$?
  set -e
  echo "[gpu-check] $mode: profile-train run exit code $rc"
  [ $rc -eq 0 ] || status=1
done

# Assertions on the raw capture (independent of the analysis): a minimal reader of the native format
# (src/agent/FORMAT.md).
"$PY" - "$OUT" <<'PYEOF' || status=1
import glob, json, os, struct, sys
out = sys.argv[1]
KIND = {6: "kernel", 7: "memcpy", 8: "memset", 9: "sync", 10: "runtime", 11: "driver", 12: "memory", 1: "range"}
MEM = {0: "unknown", 1: "pageable", 2: "pinned", 3: "device", 4: "managed"}

def read(path):
    b = open(path, "rb").read()
    assert b[:8] == b"PTNATIVE", path
    off = struct.unpack_from("<I", b, 12)[0]
    strings, recs, status = {}, [], {}
    while off + 16 <= len(b):
        magic, typ, _, n, _ = struct.unpack_from("<IHHII", b, off)
        p = b[off + 16: off + 16 + n]
        if magic != 0x4B4E4843 or len(p) < n:
            break
        if typ == 2:
            i = 0
            while i + 8 <= n:
                sid, ln = struct.unpack_from("<II", p, i); i += 8
                strings[sid] = p[i:i + ln].decode("utf-8", "replace"); i += ln + (4 - ln % 4) % 4
        elif typ == 3:
            for j in range(0, n - n % 64, 64):
                recs.append(struct.unpack_from("<BBBBIqqQqqIIiI", p, j))
        elif typ == 4:
            status = json.loads(p)
        off += 16 + ((n + 7) & ~7)
    return strings, recs, status

results, ok = {}, True
for mode, want_src in (("pageable", "pageable"), ("pinned", "pinned")):
    r = {"kernels": 0, "h2d": 0, "h2d_src_kinds": {}, "steps": 0, "runtime_calls": 0, "cupti": None}
    for f in glob.glob(os.path.join(out, mode, "capture", "*.ptrace")):
        strings, recs, status = read(f)
        if status.get("cupti", {}).get("state") == "enabled" or r["cupti"] is None:
            r["cupti"] = status.get("cupti")
        for rec in recs:
            kind, a, b_ = rec[0], rec[1], rec[2]
            if kind == 6: r["kernels"] += 1
            if kind == 10: r["runtime_calls"] += 1
            if kind == 7 and a == 1:
                r["h2d"] += 1
                k = MEM.get(b_, str(b_)); r["h2d_src_kinds"][k] = r["h2d_src_kinds"].get(k, 0) + 1
            if kind == 1 and strings.get(rec[4], "").startswith("ProfilerStep#"): r["steps"] += 1
    checks = {
        "cupti enabled": (r["cupti"] or {}).get("state") == "enabled",
        "kernels captured": r["kernels"] >= 40,
        "runtime API calls captured": r["runtime_calls"] > 0,
        "H2D copies captured": r["h2d"] >= 40,
        "H2D source memory kind is %s" % want_src: r["h2d_src_kinds"].get(want_src, 0) >= 40,
        "steps captured": r["steps"] >= 39,
    }
    rep = os.path.join(out, mode, "report.json")
    if os.path.exists(rep):
        j = json.load(open(rep))
        r["report"] = {"verdict": j.get("verdict", {}).get("bottleneck"), "device": j.get("device"),
                       "h2d": ((j.get("gpu") or {}).get("memcpy") or {}).get("h2d"),
                       "steps": (j.get("steps") or {}).get("count")}
    r["checks"] = checks
    results[mode] = r
    for name, passed in checks.items():
        print("[gpu-check] %-8s %-40s %s" % (mode, name, "PASS" if passed else "FAIL"))
        ok &= passed
json.dump(results, open(os.path.join(out, "check.json"), "w"), indent=2, default=str)
with open(os.path.join(out, "check.md"), "w") as md:
    md.write("# GPU capture check\n\n")
    for mode, r in results.items():
        md.write("## %s\n\n" % mode)
        for name, passed in r["checks"].items():
            md.write("- %s: %s\n" % (name, "PASS" if passed else "FAIL"))
        md.write("- kernels %d, H2D copies %d (source kinds %s), steps %d, runtime calls %d\n\n" % (
            r["kernels"], r["h2d"], r["h2d_src_kinds"], r["steps"], r["runtime_calls"]))
sys.exit(0 if ok else 1)
PYEOF
echo "[gpu-check] overall: $([ $status -eq 0 ] && echo PASS || echo FAIL); results in $OUT"
exit $status
