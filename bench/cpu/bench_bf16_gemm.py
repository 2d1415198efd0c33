"""bf16 over fp32 GEMM and convolution speed on this CPU (the figure behind rule cpu-bf16-autocast's bound).

torch.mm at a few square sizes and a 3x3 convolution, fp32 and bf16 interleaved round by round (so a load change
on a shared machine hits both), one torch thread by default. Prints per size the median time of each dtype and
the ratio fp32 / bf16 (> 1: bf16 faster), plus the CPU flags (AMX, AVX512-BF16) and torch's CPU capability.

    /work/main/.venv/bin/python bench/cpu/bench_bf16_gemm.py [--threads 1] [--rounds 7]

To measure the AVX512-BF16 class on an AMX machine, cap oneDNN's ISA (bf16 GEMMs and convolutions go through
oneDNN; fp32 ones through MKL, unaffected): ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16.
"""
import argparse
import os
import platform
import statistics
import time

import torch


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def model_name():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def timed(fn, min_s):
    """Seconds per call: calls repeated until min_s has passed (at least 3)."""
    fn()  # warm (oneDNN primitive creation, packing)
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        el = time.perf_counter() - t0
        if n >= 3 and el >= min_s:
            return el / n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--min-s", type=float, default=0.15, help="time per measurement")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    flags = cpu_flags()
    print("cpu: %s; amx_bf16=%s avx512_bf16=%s; torch %s, capability %s, %d thread(s)"
          % (model_name(), "amx_bf16" in flags, "avx512_bf16" in flags, torch.__version__,
             torch.backends.cpu.get_cpu_capability(), torch.get_num_threads()))
    print("ONEDNN_MAX_CPU_ISA=%s" % os.environ.get("ONEDNN_MAX_CPU_ISA", "(unset: the best the CPU has)"))
    cases = []
    for n in (256, 512, 1024, 2048):
        a, b = torch.randn(n, n), torch.randn(n, n)
        cases.append(("mm %dx%d" % (n, n), (a, b), (a.bfloat16(), b.bfloat16()), lambda x, y: torch.mm(x, y)))
    x, w = torch.randn(16, 64, 56, 56), torch.randn(64, 64, 3, 3)
    cases.append(("conv2d 16x64x56x56 k3", (x, w), (x.bfloat16(), w.bfloat16()),
                  lambda i, k: torch.nn.functional.conv2d(i, k, padding=1)))
    print("%-24s %12s %12s %9s" % ("case", "fp32 ms", "bf16 ms", "fp32/bf16"))
    with torch.no_grad():
        for name, f32, b16, op in cases:
            t32, t16 = [], []
            for _ in range(args.rounds):  # interleaved: each round times fp32 then bf16
                t32.append(timed(lambda: op(*f32), args.min_s))
                t16.append(timed(lambda: op(*b16), args.min_s))
            m32, m16 = statistics.median(t32), statistics.median(t16)
            print("%-24s %12.3f %12.3f %8.2fx" % (name, 1e3 * m32, 1e3 * m16, m32 / m16))


if __name__ == "__main__":
    main()
