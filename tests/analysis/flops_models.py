"""Records CPU torch.profiler traces (record_shapes=True) of small models together with FlopCounterMode's
count of every call, for tests/analysis/flops_test.cpp.

Usage: python flops_models.py OUTDIR
Writes OUTDIR/<model>.json (the Kineto trace) and OUTDIR/<model>.flops.json: {"calls": [[op, flops], ...]} in
dispatch order, "aten::addmm" spelling. Under a dispatch mode, CPU SDPA takes its math path (bmm + softmax), so
the attention models are recorded without the mode and counted with FlopCounterMode's own formulas
(torch.utils.flop_counter.sdpa_flop_count / sdpa_backward_flop_count) on the real q, k, v: every count here is
torch's. FlopCounterMode counts causal attention as the full square.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

aten = torch.ops.aten


class Recording(FlopCounterMode):
    """FlopCounterMode that also keeps each call's count."""

    def __init__(self):
        super().__init__(display=False)
        self.calls = []

    def _count_flops(self, func_packet, out, args, kwargs):
        before = sum(self.flop_counts["Global"].values())
        result = super()._count_flops(func_packet, out, args, kwargs)
        if func_packet in self.flop_registry:
            after = sum(self.flop_counts["Global"].values())
            self.calls.append([str(func_packet).replace("aten.", "aten::", 1), after - before])
        return result


def mlp():
    m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    x = torch.randn(8, 64)
    return lambda: m(x).sum().backward()


def convnet():
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, (3, 5), padding=(1, 2), dilation=(2, 1)), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(16 * 6 * 8, 10))
    x = torch.randn(2, 3, 16, 16)
    return lambda: m(x).sum().backward()


def attention(causal):
    def make():
        q = torch.randn(2, 4, 16, 32, requires_grad=True)
        k = torch.randn(2, 4, 24 if not causal else 16, 32, requires_grad=True)
        v = torch.randn(2, 4, 24 if not causal else 16, 32, requires_grad=True)
        step = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal).sum().backward()
        step.expected = [
            ["aten::_scaled_dot_product_flash_attention_for_cpu", flop_counter.sdpa_flop_count(q.shape, k.shape, v.shape)],
            ["aten::_scaled_dot_product_flash_attention_for_cpu_backward",
             flop_counter.sdpa_backward_flop_count(q.shape, q.shape, k.shape, v.shape)],
        ]
        return step
    return make


def bmm_softmax():
    q = torch.randn(6, 16, 32, requires_grad=True)
    k = torch.randn(6, 24, 32, requires_grad=True)
    v = torch.randn(6, 24, 40, requires_grad=True)

    def step():
        scores = torch.bmm(q, k.transpose(1, 2)) * 32 ** -0.5
        torch.bmm(torch.softmax(scores, dim=-1), v).sum().backward()
    return step


def layer_norm():
    m = torch.nn.LayerNorm(64)
    x = torch.randn(8, 16, 64)
    return lambda: m(x)


MODELS = {"mlp": mlp, "convnet": convnet, "sdpa": attention(False), "sdpa_causal": attention(True),
          "bmm_softmax": bmm_softmax, "layer_norm": layer_norm}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name, make in MODELS.items():
        step = make()
        step()  # warm-up: lazy initialization outside the recorded run
        expected = getattr(step, "expected", None)
        rec = Recording()
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            if expected is None:
                with rec:
                    step()
            else:
                step()
        prof.export_chrome_trace(os.path.join(out, name + ".json"))
        with open(os.path.join(out, name + ".flops.json"), "w") as f:
            json.dump({"calls": rec.calls if expected is None else expected}, f)


if __name__ == "__main__":
    main()
