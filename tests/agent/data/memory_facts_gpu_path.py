"""The GPU branch of profile_train_memory.MemoryFacts without a GPU: torch.cuda's counters replaced by a scripted
allocator (each step's peak, reset at the step's start), the rest real torch. Run by memory_budget_e2e_test.cpp
with the shim's directory as argv[1]; exits 0 when every check holds, else prints what failed and exits 1.
"""
import sys
import weakref

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402
from torch import nn  # noqa: E402

import profile_train_memory as pm  # noqa: E402


class FakeCuda:
    """allocated now and the peak since the last reset, as the caching allocator keeps them on the host."""

    def __init__(self):
        self.allocated, self.peak, self.reserved_peak, self.resets = 0, 0, 0, 0

    def set(self, allocated, peak):
        self.allocated = allocated
        self.peak = max(self.peak, peak)
        self.reserved_peak = max(self.reserved_peak, peak + 1000)

    def is_initialized(self):
        return True

    def current_device(self):
        return 0

    def max_memory_allocated(self, dev):
        return self.peak

    def max_memory_reserved(self, dev):
        return self.reserved_peak

    def memory_allocated(self, dev):
        return self.allocated

    def reset_peak_memory_stats(self, dev):
        self.resets += 1
        self.peak = self.allocated
        self.reserved_peak = self.allocated


class TorchView:
    """torch, with .cuda replaced."""

    def __init__(self, cuda):
        self.cuda = cuda

    def __getattr__(self, name):
        return getattr(torch, name)


class Shim:
    def __init__(self, model):
        self.models = [weakref.ref(model)]
        self.errors = []

    def note_error(self, where, e):
        self.errors.append("%s: %r" % (where, e))


def main():
    fails = []

    def check(cond, what):
        if not cond:
            fails.append(what)

    model = nn.Linear(16, 8)
    cuda = FakeCuda()
    shim = Shim(model)
    mf = pm.MemoryFacts(TorchView(cuda), shim)
    x = torch.randn(4, 16)
    # The device comes from the forward's input; a CUDA tensor is not needed: the string is what is read.
    mf.on_forward((x,), {})
    mf.device = "cuda:0"
    peaks = [5000, 9000, 9100, 9050]
    for i, p in enumerate(peaks):
        cuda.set(3000 + 10 * i, p)
        mf.at_step(i + 1)
    f = mf.facts()
    steps = f.get("steps", {})
    check(steps.get("peak_allocated_bytes") == peaks, "per-step peaks %r" % steps)
    check(steps.get("allocated_at_start_bytes") == [3000, 3010, 3020, 3030], "allocated at start %r" % steps)
    check(steps.get("first") == 1, "first %r" % steps.get("first"))
    check(cuda.resets == len(peaks), "one reset per step: %d" % cuda.resets)
    check("heap_in_use_at_start_bytes" not in steps and "rss_at_start_bytes" not in steps, "no CPU series on a GPU")
    # facts.gpu.memory_peak_bytes stays the run's peak although the counter was reset.
    peak, reserved = mf.gpu_peaks(cuda.max_memory_allocated(0), cuda.max_memory_reserved(0))
    check(peak == 9100, "run's peak %d" % peak)
    check(reserved == 10100, "run's reserved peak %d" % reserved)
    check(f.get("batch_size") == 4, "batch %r" % f.get("batch_size"))
    check(not shim.errors, "errors %r" % shim.errors)
    if fails:
        print("\n".join(fails))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
