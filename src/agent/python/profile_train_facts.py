"""profile-train shim, the facts (facts-<pid>.json), the training loss and the hooks into the memory and module-
range modules: the methods of profile_train_shim._Shim that write what the run saw, as a mixin (FactsMixin), and
the CPU facts. Loaded by profile_train_shim.py by path (as its other siblings); not a module of its own for
users. Split from profile_train_shim.py, which holds the state, the steps and the ranges."""

import json
import os
import sys
import threading
import time

_MODULE_RANGES = "profile_train_module_ranges"  # the module next to this file (no dotted literal: knobs_test)
_MEMORY = "profile_train_memory"  # facts.memory: parameter, gradient, optimizer state and activation bytes
_MEMORY_VOLATILE = ("steps", "rss_peak_bytes", "ram_available_bytes")  # facts.memory keys that move every step

# profile_train_shim._load_sibling, set by the shim when it loads this file: modules by path, next to the shim.
load_sibling = None


def cpu_facts(torch, world_size=None):
    """The host side a CPU rule needs: the cores this process may run on (affinity, not the machine's
    count), torch's intra-/inter-op thread pools, the ATen CPU kernel level and whether the CPU computes
    bf16 natively (AMX or AVX512-BF16; otherwise bf16 autocast is emulated and slower than fp32)."""
    out = {}
    try:
        out["cores"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        out["cores"] = os.cpu_count()
    out["torch_threads"] = int(torch.get_num_threads())
    out["interop_threads"] = int(torch.get_num_interop_threads())
    try:
        out["capability"] = str(torch.backends.cpu.get_cpu_capability())
    except Exception:
        out["capability"] = None
    flags = set()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    out["amx_bf16"] = "amx_bf16" in flags if flags else None
    out["avx512_bf16"] = "avx512_bf16" in flags if flags else None
    out["bf16_native"] = (out["amx_bf16"] or out["avx512_bf16"]) if flags else None
    # Who else wants these cores (rule cpu-oversubscription, cpu-threads): OMP_NUM_THREADS as the environment
    # set it (torchrun sets 1 when several processes share a node), the launcher, and the ranks on this host.
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    out["omp_num_threads"] = int(omp) if omp.isdigit() else None
    out["launcher"] = "torchrun" if "TORCHELASTIC_RUN_ID" in os.environ else None
    out["local_ranks"] = _local_ranks(world_size)
    return out


def _local_ranks(world_size):
    """Processes of this job on this host: LOCAL_WORLD_SIZE (torchrun, Lightning with torchrun); otherwise the
    whole world (facts.distributed.world_size, kept after the group is destroyed) when its rendezvous is on the
    loopback address (one host: mp.spawn, Lightning's own launcher); 1 without torch.distributed; None when it
    cannot be told."""
    lws = os.environ.get("LOCAL_WORLD_SIZE", "").strip()
    if lws.isdigit() and int(lws) > 0:
        return int(lws)
    try:
        world = int(world_size or 1)
    except (TypeError, ValueError):
        return None
    if world <= 1:
        return 1
    if os.environ.get("MASTER_ADDR", "") in ("127.0.0.1", "localhost", "::1"):
        return world
    return None

def _open_above_stdio(path):
    """os.open for writing, moved above fds 0-2: a program that closed its stdout or stderr must not have its
    prints land in our file while it is open."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
    if fd <= 2:
        import fcntl
        try:
            high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
        finally:
            os.close(fd)
        fd = high
    return fd


class FactsMixin:
    """The facts, the loss and the memory / module-range hooks of profile_train_shim._Shim (see its attributes)."""

    # ---- the training loss (tune's quality guard) ---------------------------------------------------------
    _LOSS_FLUSH_EVERY = 64  # read back at most every 64 steps' losses (one host sync each) in an unbounded run

    def note_loss(self, args, kwargs):
        """On the training thread, from backward(): keeps the loss (the tensor backward() was called on) when it
        is a scalar, detached, on its device. No host sync here: the values are read back by loss_flush at the
        end of the measured window, every _LOSS_FLUSH_EVERY losses, and at exit."""
        try:
            t = args[0] if args else kwargs.get("tensors", kwargs.get("self"))
            torch = self.torch
            if torch is None or not isinstance(t, torch.Tensor) or t.numel() != 1 or t.is_complex():
                self.loss_not_scalar += 1
                return
            self.loss_pending.append((self.step_index, t.detach()))
            if len(self.loss_pending) >= self._LOSS_FLUSH_EVERY:
                self.loss_flush()
        except Exception as e:
            self.note_error("loss", e)

    def loss_flush(self):
        """Reads the pending losses back (one device-to-host copy for all of them) into the per-step sums and
        refreshes facts.loss. Idempotent; best effort."""
        pending, self.loss_pending = self.loss_pending, []
        try:
            if pending:
                torch = self.torch
                try:
                    values = torch.stack([t.reshape(()).float() for _, t in pending]).tolist()
                except Exception:  # tensors on different devices: one by one
                    values = [float(t) for _, t in pending]
                for (step, _), v in zip(pending, values):
                    acc = self.loss_steps.setdefault(step, [0.0, 0])
                    acc[0] += v
                    acc[1] += 1
            if self.loss_steps or self.loss_not_scalar:
                steps = sorted(self.loss_steps)
                # JSON has no NaN / Infinity: a non-finite loss is written as the string "nan" / "inf" / "-inf".
                vals = []
                for k in steps:
                    v = self.loss_steps[k][0] / self.loss_steps[k][1]
                    vals.append(v if v == v and v not in (float("inf"), float("-inf")) else repr(v))
                self.facts["loss"] = {"recorded": bool(steps), "steps": steps, "values": vals,
                                      "backward_calls": sum(a[1] for a in self.loss_steps.values()),
                                      "not_scalar_calls": self.loss_not_scalar}
        except Exception as e:
            self.note_error("loss", e)

    # ---- facts --------------------------------------------------------------------------------------------
    def maybe_write_facts(self):
        """At a step boundary, on the training thread: wakes the writer thread at most once a second (a clock
        read most of the time; collecting and writing the facts cost 1-30 ms and happen on the writer)."""
        now = time.monotonic()
        if now - self.facts_requested_at >= 1.0:
            self.facts_requested_at = now
            self.note_device()
            self.wake_writer()

    def note_device(self):
        torch = self.torch
        try:
            if torch is not None and torch.cuda.is_initialized():
                self.cuda_device = torch.cuda.current_device()
        except Exception:
            pass

    def wake_writer(self):
        if not self.out or self.is_worker or os.getpid() != self.pid:
            return
        if self.writer is None:
            try:
                self.writer = threading.Thread(target=self.writer_loop, name="profile-train-facts", daemon=True)
                self.writer.start()
            except Exception as e:  # no thread: write here, as before
                self.writer = None
                self.note_error("facts writer", e)
                self.write_facts()
                return
        self.writer_wake.set()

    def writer_loop(self):
        while True:
            self.writer_wake.wait()
            self.writer_wake.clear()
            if os.getpid() != self.pid:
                return
            self.write_facts()

    def collect_runtime_facts(self, final=False):
        """`final`: at exit or after the capture window, when facts.collectives gets all its instances."""
        torch = self.torch
        f = self.facts
        try:
            f["cudnn"] = {"benchmark": bool(torch.backends.cudnn.benchmark)}
            f["tf32"] = {"matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                         "cudnn": bool(torch.backends.cudnn.allow_tf32)}
            gpu = f.setdefault("gpu", {})
            initialized = torch.cuda.is_initialized()
            gpu["available"] = bool(initialized and torch.cuda.is_available())
            if initialized:
                gpu["count"] = torch.cuda.device_count()
                # The training thread's device (noted there): CUDA's current device is per thread.
                dev = self.cuda_device if self.cuda_device is not None else torch.cuda.current_device()
                props = torch.cuda.get_device_properties(dev)
                gpu["name"] = props.name
                gpu["memory_total_bytes"] = int(props.total_memory)
                peak, reserved = int(torch.cuda.max_memory_allocated(dev)), int(torch.cuda.max_memory_reserved(dev))
                if self.memory is not None:  # it resets the peaks per step: the run's are the largest seen
                    peak, reserved = self.memory.gpu_peaks(peak, reserved)
                gpu["memory_peak_bytes"] = peak
                gpu["memory_reserved_peak_bytes"] = reserved
                stats = torch.cuda.memory_stats(dev)  # the caching allocator's counters since start
                gpu["alloc_retries"] = int(stats.get("num_alloc_retries", 0))
                gpu["ooms"] = int(stats.get("num_ooms", 0))
            ws = os.environ.get("WORLD_SIZE")
            # The rank from torch.distributed itself: launchers other than torchrun (Lightning's own DDP
            # launcher, mp.spawn) do not set RANK in the environment the agent reads at start-up.
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                f["distributed"] = {"world_size": torch.distributed.get_world_size(),
                                    "rank": torch.distributed.get_rank(),
                                    "backend": str(torch.distributed.get_backend())}
            elif ws:
                f["distributed"] = {"world_size": int(ws)}
                if os.environ.get("RANK", "").isdigit():
                    f["distributed"]["rank"] = int(os.environ["RANK"])
            f["versions"] = {"torch": torch.__version__, "python": sys.version.split()[0]}
            f["cpu"] = cpu_facts(torch, f.get("distributed", {}).get("world_size"))
            f["capture"]["steps_seen"] = self.steps_seen()
            if self.module_bw is not None and "module_ranges" in f["capture"]:
                f["capture"]["module_ranges"].update(self.module_bw.facts())
            f["capture"]["nvtx_backend"] = self.nvtx.backend
            if self.memory is not None:
                f["memory"] = self.memory.facts()
            watch = getattr(self, "compile_watch", None)
            compiled = watch.facts() if watch is not None else None
            if compiled is not None:
                f["compile"] = compiled
            comm = getattr(self, "comm_watch", None)
            collectives = comm.facts(final) if comm is not None else None
            if collectives is not None:
                f["collectives"] = collectives
        except Exception as e:  # facts are best effort
            self.note_error("facts", e)

    def write_facts(self, force=False):
        """Collects the facts and writes them when they changed; steps_seen alone is no change, except when
        `force` (at exit). Runs on the writer thread, and at exit on the thread that exits."""
        if not self.out or self.is_worker or os.getpid() != self.pid:
            return
        if self.steps_seen() == 0 and not self.models and "dataloader" not in self.facts:
            return  # this process did not train (e.g. a launcher): no facts file
        with self.write_lock:
            try:
                self.collect_runtime_facts(final=force or not self.active)
                key, text = self.facts_json()
                if text is None or text == self.facts_text or (key == self.facts_key and not force):
                    return
                path = os.path.join(self.out, "facts-%d.json" % self.pid)
                tmp = path + ".tmp"
                fd = _open_above_stdio(tmp)
                try:
                    data = text.encode("utf-8", "replace")
                    while data:
                        data = data[os.write(fd, data):]
                finally:
                    os.close(fd)
                os.replace(tmp, path)
                self.facts_key, self.facts_text = key, text
            except Exception as e:
                self.note_error("write_facts", e)

    def facts_json(self):
        """(the facts less steps_seen, the facts) as JSON. The training thread may add a fact meanwhile (a dict
        changing size under json.dumps): tried again, a few times."""
        for _ in range(5):
            try:
                cap = self.facts.get("capture", {})
                seen = cap.get("steps_seen")
                text = json.dumps(self.facts, default=str)
                key = text
                mem = self.facts.get("memory")
                steady_facts = self.facts
                if isinstance(mem, dict):  # its per-step figures, like steps_seen, are no change by themselves
                    steady_facts = dict(steady_facts, memory={k: v for k, v in mem.items()
                                                              if k not in _MEMORY_VOLATILE})
                if "loss" in self.facts:  # nor are the losses read back so far (the file written at exit has all)
                    steady_facts = dict(steady_facts, loss=None)
                if "collectives" in self.facts:  # nor the collectives so far (all of them at exit, too)
                    steady_facts = dict(steady_facts, collectives=None)
                if steady_facts is not self.facts:
                    key = json.dumps(steady_facts, default=str)
                key = key.replace('"steps_seen": %s' % json.dumps(seen), "", 1) if seen is not None else key
                return key, text
            except RuntimeError:
                time.sleep(0.001)
        return None, None

    def note_error(self, where, e):
        if len(self.errors) < 10:
            self.errors.append("%s: %r" % (where, e))
            self.facts["shim_errors"] = list(self.errors)

    def note_model(self, module):
        torch = self.torch
        try:
            params = list(module.parameters())
            self.facts["params"] = {
                "dtypes": sorted({str(p.dtype).replace("torch.", "") for p in params}),
                "device": str(params[0].device) if params else None,
                "count": int(sum(p.numel() for p in params)),
            }
            convs = [m for m in module.modules() if isinstance(m, torch.nn.modules.conv._ConvNd)]
            cl = None
            if convs and convs[0].weight.dim() == 4:
                cl = bool(convs[0].weight.is_contiguous(memory_format=torch.channels_last)
                          and not convs[0].weight.is_contiguous())
            if self.module_depth:
                self.install_module_ranges(module)
            self.facts["model"] = {
                "class": type(module).__name__,
                "has_conv": bool(convs),
                "channels_last": cl,
                "dataparallel": isinstance(module, torch.nn.DataParallel),
                "ddp": isinstance(module, torch.nn.parallel.DistributedDataParallel),
            }
        except Exception as e:
            self.note_error("model", e)

    def memory_hook(self, name, *args):
        """profile_train_memory.MemoryFacts.<name>(*args) (facts.memory), on the training thread of the main
        process; loaded on first use, and off for good after a failure to load."""
        if self.memory_failed or self.is_worker or os.getpid() != self.pid or not self.out:
            return
        try:
            if self.memory is None:
                self.memory = load_sibling(_MEMORY).MemoryFacts(self.torch, self)
            getattr(self.memory, name)(*args)
        except Exception as e:
            self.memory_failed = True
            self.note_error("memory", e)

    def install_module_ranges(self, model):
        """Ranges around each submodule down to self.module_depth: forward ranges from forward pre/post hooks
        (about as cheap as the call itself; they change nothing in autograd) and, with ",backward", backward
        ranges from Node pre-hooks on the autograd graph (profile_train_module_ranges.py: how, and the measured
        cost). Not full backward hooks: those wrap every module's inputs and outputs in extra autograd nodes
        (measured 60-260 us per module per step here) and print a UserWarning into the user's output. Failures
        are noted and leave the model as it was."""
        try:
            mr = load_sibling(_MODULE_RANGES)
            count, self.module_bw = mr.install(model, self.module_depth, self.module_backward, self.torch,
                                               self.nvtx, lambda: self.active and not self.is_worker,
                                               self.note_error)
            self.facts.setdefault("capture", {})["module_ranges"] = {"depth": self.module_depth, "modules": count}
        except Exception as e:
            self.module_bw = None
            self.note_error("module_ranges", e)

    def note_autocast(self, device_type):
        torch = self.torch
        try:
            enabled = bool(torch.is_autocast_enabled(device_type))
            amp = self.facts.setdefault("amp", {})
            amp["autocast_enabled"] = enabled
            amp["dtype"] = str(torch.get_autocast_dtype(device_type)).replace("torch.", "") if enabled else None
            amp.setdefault("grad_scaler", False)
        except Exception as e:
            self.note_error("autocast", e)
