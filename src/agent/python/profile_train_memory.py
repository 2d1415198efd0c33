"""profile-train shim, memory facts (facts.memory): where a training step's bytes go, exactly from the tensors.

Loaded by profile_train_shim.py next to it; its hooks are called from the shim's forward, backward, optimizer
step and step boundary. Everything is read from the tensors and the allocator's host-side counters; nothing
here synchronizes with a GPU beyond what torch.cuda.max_memory_allocated / memory_allocated /
reset_peak_memory_stats do (they read the caching allocator's counters on the host). The one visible effect on
the program: with the per-step reset, a program that reads torch.cuda.max_memory_allocated itself sees the peak
since the current step began, not since the start (facts.gpu.memory_peak_bytes keeps the run's).

  parameter_bytes (by dtype)  the top-level model's parameters (each storage once)
  gradient_bytes              their .grad tensors, read after an optimizer step (before zero_grad frees them)
  optimizer_state_bytes       every tensor in optimizer.state (Adam/AdamW exp_avg, exp_avg_sq, max_exp_avg_sq
                              with amsgrad, step; SGD momentum_buffer; any other optimizer's tensors alike),
                              per optimizer class
  batch_size                  the first dimension of the first tensor the model's forward gets (grad mode)
  activation_saved_bytes      the tensors the autograd graph of the loss holds for backward when backward
                              starts, parameters left out, each storage once (the graph walked through its
                              nodes' _saved_* attributes; the first backward pass only: about 40 us a node,
                              34 ms for 801 nodes here, once)
  steps                       per step, at its start: on a GPU the previous step's peak allocated bytes
                              (max_memory_allocated, then reset_peak_memory_stats) and the allocated bytes now;
                              on the CPU the bytes the C heap has handed out and not taken back (glibc
                              mallinfo2: uordblks + hblkhd, exact and cheap, ~10 us; it is where torch's CPU
                              allocator gets its blocks), else the process's resident set (/proc/self/statm,
                              which moves by megabytes with the heap's trimming)
  rss_peak_bytes, ram_total_bytes, ram_available_bytes
                              the process's peak RSS (ru_maxrss), the RAM it may use (MemTotal, or the cgroup's
                              memory.max when lower) and MemAvailable, at the last facts write
"""

import os

_MEASURED_BACKWARDS = 1   # backward passes whose graph is walked: the first (a step the steady state leaves out; the
                          # walk costs ~40 us a node, and the activations' size is the same each step)
_MEASURED_OPT_STEPS = 3   # optimizer steps after which parameters, gradients and state are counted
_MAX_STEPS = 512          # per-step samples kept (the first ones; growth is fitted over them)


def _storage_key(t):
    """(data pointer, bytes) of a tensor's storage, or None (a sparse or meta tensor, or no storage)."""
    try:
        s = t.untyped_storage()
        return s.data_ptr(), int(s.nbytes())
    except Exception:
        return None


def _sum_storages(tensors, skip=()):
    """Bytes of the distinct storages of `tensors`, less those whose pointer is in `skip`."""
    seen = {}
    for t in tensors:
        k = _storage_key(t)
        if k is None or k[0] in skip or k[0] == 0:
            continue
        seen[k[0]] = max(seen.get(k[0], 0), k[1])
    return sum(seen.values()), set(seen)


def _mallinfo2():
    """glibc's mallinfo2 (2.33+) as a callable returning the bytes in use, or None (another libc, or another
    allocator preloaded: then its figures are not the heap's)."""
    import ctypes

    class _Info(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                     "fordblks", "keepcost")]
    try:
        if any(x in os.environ.get("LD_PRELOAD", "") for x in ("jemalloc", "tcmalloc", "mimalloc")):
            return None
        fn = ctypes.CDLL(None).mallinfo2
        fn.restype = _Info
        fn.argtypes = []

        def in_use():
            m = fn()
            return int(m.uordblks) + int(m.hblkhd)
        return in_use if in_use() > 0 else None
    except Exception:
        return None


def _read_int_file(path):
    try:
        with open(path) as fh:
            text = fh.read().strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


def _meminfo():
    out = {}
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                k, _, v = line.partition(":")
                parts = v.split()
                if parts and parts[0].isdigit():
                    out[k] = int(parts[0]) * 1024
    except OSError:
        pass
    return out


class MemoryFacts:
    def __init__(self, torch, shim):
        self.torch = torch
        self.shim = shim
        self.batch_size = None
        self.param_bytes = None
        self.param_by_dtype = None
        self.param_ptrs = set()
        self.grad_bytes = None
        self.opt_state = {}      # class name -> bytes
        self.opt_seen = {}       # id(optimizer) -> class name (a state counted once per optimizer)
        self.opt_bytes = {}      # id(optimizer) -> bytes
        self.opt_steps = 0
        self.backwards = 0
        self.saved_bytes = None
        self.device = None
        self.step_first = None   # the step index of the first sample
        self.peaks = []          # GPU: peak allocated bytes of each step
        self.at_start = []       # GPU: allocated bytes at each step's start; CPU: RSS at each step's start
        self.peak_overall = 0    # GPU: the peaks before each reset (facts.gpu.memory_peak_bytes stays the run's)
        self.reserved_overall = 0
        self.page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self.heap = None         # CPU: _mallinfo2's reader, looked up at the first step

    # ---- hooks ---------------------------------------------------------------------------------------------
    def on_forward(self, args, kwargs):
        """The top-level model's forward: the batch size from its first tensor argument (training passes only)."""
        torch = self.torch
        try:
            if not torch.is_grad_enabled():
                return
            for a in list(args) + list(kwargs.values()):
                if isinstance(a, torch.Tensor):
                    if a.dim() >= 1:
                        self.batch_size = int(a.shape[0])
                        if self.device is None:
                            self.device = str(a.device)
                    return
        except Exception as e:
            self.shim.note_error("memory batch", e)

    def on_backward(self, args, kwargs):
        """Before a backward pass: the bytes its graph holds for it (the activations), on the first few."""
        if self.backwards >= _MEASURED_BACKWARDS:
            return
        self.backwards += 1
        torch = self.torch
        try:
            roots = args[0] if args else kwargs.get("tensors")
            if isinstance(roots, torch.Tensor):
                roots = [roots]
            fns = [r.grad_fn for r in (roots or []) if isinstance(r, torch.Tensor) and r.grad_fn is not None]
            # Visited nodes stay referenced until the walk ends: a node's Python object lives only while
            # referenced, and a freed one's id() is reused by the next.
            saved, seen_fn, visited = [], set(), []
            while fns:
                fn = fns.pop()
                if fn is None or id(fn) in seen_fn:
                    continue
                seen_fn.add(id(fn))
                visited.append(fn)
                for name in dir(fn):
                    if not name.startswith("_saved_"):
                        continue
                    try:
                        v = getattr(fn, name)
                    except Exception:  # freed already, or not a tensor accessor
                        continue
                    for x in (v if isinstance(v, (tuple, list)) else (v,)):
                        if isinstance(x, torch.Tensor):
                            saved.append(x)
                try:  # a Python autograd.Function's ctx
                    for x in getattr(fn, "saved_tensors", ()) or ():
                        if isinstance(x, torch.Tensor):
                            saved.append(x)
                except Exception:
                    pass
                for nxt, _ in getattr(fn, "next_functions", ()) or ():
                    if nxt is not None:
                        fns.append(nxt)
            if not self.param_ptrs:
                self.count_params()
            total, _ = _sum_storages(saved, self.param_ptrs)
            self.saved_bytes = max(self.saved_bytes or 0, total)
        except Exception as e:
            self.shim.note_error("memory activations", e)

    def on_optimizer_step(self, opt):
        """After an optimizer step: parameters, their gradients and the optimizer's state."""
        if self.opt_steps >= _MEASURED_OPT_STEPS * max(1, len(self.opt_seen)):
            return
        self.opt_steps += 1
        torch = self.torch
        try:
            self.count_params()
            params = self.model_params()
            if not params:
                params = [p for g in opt.param_groups for p in g.get("params", [])]
            grads = [p.grad for p in params if isinstance(getattr(p, "grad", None), torch.Tensor)]
            if grads:
                self.grad_bytes = _sum_storages(grads)[0]
            tensors = []
            for st in getattr(opt, "state", {}).values():
                if isinstance(st, dict):
                    tensors += [v for v in st.values() if isinstance(v, torch.Tensor)]
            cls = type(opt).__name__
            self.opt_seen[id(opt)] = cls
            self.opt_bytes[id(opt)] = _sum_storages(tensors, self.param_ptrs)[0]
            by_class = {}
            for key, b in self.opt_bytes.items():
                c = self.opt_seen[key]
                by_class[c] = by_class.get(c, 0) + b
            self.opt_state = by_class
        except Exception as e:
            self.shim.note_error("memory optimizer", e)

    def at_step(self, index):
        """At a step's start: the previous step's GPU peak (then reset) or the process's RSS now."""
        if len(self.at_start) >= _MAX_STEPS:
            return
        torch = self.torch
        if self.device is None:  # no training forward yet: the device is not known
            return
        try:
            if self.step_first is None:
                self.step_first = index
            if self.device is not None and self.device.startswith("cuda") and torch.cuda.is_initialized():
                dev = torch.cuda.current_device()
                peak = int(torch.cuda.max_memory_allocated(dev))
                self.peak_overall = max(self.peak_overall, peak)
                self.reserved_overall = max(self.reserved_overall, int(torch.cuda.max_memory_reserved(dev)))
                self.peaks.append(peak)
                self.at_start.append(int(torch.cuda.memory_allocated(dev)))
                torch.cuda.reset_peak_memory_stats(dev)
            else:
                if self.heap is None:
                    self.heap = _mallinfo2() or False
                if self.heap:
                    self.at_start.append(self.heap())
                else:
                    with open("/proc/self/statm") as fh:
                        self.at_start.append(int(fh.read().split()[1]) * self.page)
        except Exception as e:
            self.shim.note_error("memory step", e)

    # ---- facts ---------------------------------------------------------------------------------------------
    def model_params(self):
        for ref in list(self.shim.models):
            m = ref()
            if m is not None:
                try:
                    return list(m.parameters())
                except Exception:
                    return []
        return []

    def count_params(self):
        params = self.model_params()
        if not params:
            return
        by_dtype, ptrs = {}, {}
        for p in params:
            k = _storage_key(p)
            if k is None or k[0] in ptrs:
                continue
            ptrs[k[0]] = k[1]
            d = str(p.dtype).replace("torch.", "")
            by_dtype[d] = by_dtype.get(d, 0) + k[1]
        self.param_ptrs = set(ptrs)
        self.param_bytes = sum(ptrs.values())
        self.param_by_dtype = by_dtype

    def gpu_peaks(self, dev_peak, dev_reserved):
        """The run's peaks: the largest before any reset and the current counters."""
        return max(self.peak_overall, dev_peak), max(self.reserved_overall, dev_reserved)

    def facts(self):
        f = {}
        if self.device is not None:
            f["device"] = self.device
        if self.batch_size is not None:
            f["batch_size"] = self.batch_size
        if self.param_bytes is not None:
            f["parameter_bytes"] = self.param_bytes
            f["parameter_bytes_by_dtype"] = dict(self.param_by_dtype or {})
        if self.grad_bytes is not None:
            f["gradient_bytes"] = self.grad_bytes
        if self.opt_state:
            f["optimizer_state_bytes"] = sum(self.opt_state.values())
            f["optimizer_state_bytes_by_class"] = dict(self.opt_state)
        if self.saved_bytes is not None:
            f["activation_saved_bytes"] = self.saved_bytes
        if self.at_start:
            steps = {"first": self.step_first}
            if self.peaks:
                steps["peak_allocated_bytes"] = list(self.peaks)
                steps["allocated_at_start_bytes"] = list(self.at_start)
            elif self.heap:
                steps["heap_in_use_at_start_bytes"] = list(self.at_start)
            else:
                steps["rss_at_start_bytes"] = list(self.at_start)
            f["steps"] = steps
        try:
            import resource
            f["rss_peak_bytes"] = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # KiB on Linux
        except Exception:
            pass
        info = _meminfo()
        total = info.get("MemTotal")
        limit = _read_int_file("/sys/fs/cgroup/memory.max") or _read_int_file(
            "/sys/fs/cgroup/memory/memory.limit_in_bytes")
        if total is not None:
            f["ram_total_bytes"] = min(total, limit) if limit else total
            f["ram_total_source"] = "cgroup memory.max" if limit and limit < total else "MemTotal"
        if "MemAvailable" in info:
            f["ram_available_bytes"] = info["MemAvailable"]
        return f
