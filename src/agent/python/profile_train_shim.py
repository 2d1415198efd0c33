"""profile-train Python shim: step and phase ranges + configuration facts, with no change to the user's script.

Loaded by the sitecustomize.py next to it (put on PYTHONPATH by `profile-train run`). It waits until the program
imports torch, then patches (profile_train_patches.py, next to this file; this one holds the state, the step
model and NVTX; profile_train_facts.py the facts file and the loss):
  - DataLoader iterator __next__       -> `ProfilerStep#N` (step boundaries, see step_at_fetch) and
                                          `enumerate(DataLoader)#<Iter>.__next__` (data wait); after the first
                                          optimizer step a step ends at the optimizer step (facts.training:
                                          backward passes per optimizer step)
  - nn.Module.__call__ of the top-level model (first module with parameters a thread calls)
                                       -> `## forward ##` (and torch.autocast when an amp override asks for it)
  - Tensor.backward / autograd.backward -> `## backward ##`, and the loss (a scalar tensor backward() is called
                                          on) kept on its device, read back in one batch (facts.loss: tune's
                                          quality guard)
  - optimizer step (global hooks)       -> `Optimizer.step#<Class>.step`; without a DataLoader a step ends here
  - Optimizer.zero_grad                 -> `Optimizer.zero_grad#<Class>.zero_grad`
  - DataLoader.__init__                 -> overrides from PROFILE_TRAIN_OVERRIDES, DataLoader facts
  - DataLoader worker fetches           -> `## dataloader worker fetch ##` in worker processes, and a flush mark
                                          before a worker leaves through os._exit
Every thread that trains has its own steps (the step model's state is per thread, _Loop): Ray Train runs
train_loop_per_worker in a thread, some launchers run the loop in one, a few programs train in two threads.
Ranges go through NVTX (torch.cuda.nvtx, else ctypes on libnvtx3interop), which the profile-train agent
records. Facts are written as JSON to $PROFILE_TRAIN_OUT/facts-<pid>.json by a thread of the shim's own, woken
at most once a second from a step boundary and writing only when they changed, and at exit. Everything is best
effort: a failure here disables the shim, never the user's program.

Environment: PROFILE_TRAIN_OUT, PROFILE_TRAIN_WARMUP_STEPS, PROFILE_TRAIN_STEPS, PROFILE_TRAIN_STOP_AFTER_STEPS
(1: raise SystemExit(0) at the step boundary after the window), PROFILE_TRAIN_OVERRIDES (JSON:
dataloader.num_workers / pin_memory / batch_size / prefetch_factor / persistent_workers, amp.dtype off|bf16|fp16,
torch.threads N, backends.tf32 / backends.cudnn_benchmark / model.channels_last true|false, model.compile
off|default|reduce-overhead|max-autotune-no-cudagraphs, optimizer.impl default|foreach|fused; PROFILE_TRAIN_APPLY
names a file holding the same object, for `profile-train run --apply`),
PROFILE_TRAIN_MODULE_RANGES (DEPTH[,backward]: per-module forward [and backward] ranges, opt-in; how and what they
cost: profile_train_module_ranges.py), PROFILE_TRAIN_COLLECTIVES (0: no facts.collectives, torch.distributed and
DDP left unpatched; profile_train_comm.py).
"""

import ctypes
import glob
import importlib
import importlib.abc
import importlib.util
import json
import os
import sys
import threading
import weakref

# Environment names and control marks: include/profile_train/format/protocol.h (the one definition; its test,
# tests/agent/protocol_test.cpp, checks that this file uses exactly those it marks for the shim).
_CONTROL_FLUSH = "profile_train:flush"
_CONTROL_STOP = "profile_train:capture_stop"
_CONTROL_DISCARD = "profile_train:discard_next_pop"
_CONTROL_FINALIZE = "profile_train:finalize"

# The tuner's knobs this shim applies: key in PROFILE_TRAIN_OVERRIDES -> the DataLoader argument it sets
# (None: applied elsewhere, amp.dtype around the model's forward). The keys are the override_key fields of
# the knob catalog (include/profile_train/common/knobs.h); tests/common/knobs_test.cpp checks they agree.
_OVERRIDE_KEYS = {
    "dataloader.num_workers": "num_workers",
    "dataloader.pin_memory": "pin_memory",
    "dataloader.prefetch_factor": "prefetch_factor",
    "dataloader.persistent_workers": "persistent_workers",
    "dataloader.batch_size": "batch_size",
    "amp.dtype": None,
    # Applied by profile_train_patches.py's apply_* functions (reported in facts.overrides_applied, or
    # facts.overrides_failed with the reason when one cannot act on this program).
    "torch.threads": None,
    "backends.tf32": None,
    "backends.cudnn_benchmark": None,
    "model.channels_last": None,
    "model.compile": None,
    "optimizer.impl": None,
}
_OVERRIDE_BATCH_SIZE = "dataloader.batch_size"
_OVERRIDE_AMP = "amp.dtype"


def _module_ranges_spec(text):
    """PROFILE_TRAIN_MODULE_RANGES=DEPTH[,backward] -> (depth, backward, [unknown words])."""
    parts = [p.strip() for p in text.split(",")]
    try:
        depth = max(0, int(parts[0] or 0))
    except ValueError:
        depth = 0
    words = [p for p in parts[1:] if p]
    return depth, "backward" in words, [w for w in words if w != "backward"]


def _read_overrides():
    """The override object: PROFILE_TRAIN_OVERRIDES (JSON), else the JSON file PROFILE_TRAIN_APPLY names (what
    `tune` wrote for `profile-train run --apply`, for launchers that take no wrapper). Malformed: none."""
    text = os.environ.get("PROFILE_TRAIN_OVERRIDES", "")
    if not text:
        path = os.environ.get("PROFILE_TRAIN_APPLY", "")
        if path:
            try:
                with open(path) as fh:
                    text = fh.read()
            except OSError:
                text = ""
    try:
        ov = json.loads(text or "{}")
    except ValueError:
        return {}
    if isinstance(ov, dict) and isinstance(ov.get("overrides"), dict):
        ov = ov["overrides"]  # the file `tune` writes: {"overrides": {...}, ...}
    return ov if isinstance(ov, dict) else {}


def _env_int(name, default=0):
    try:
        return max(0, int(os.environ.get(name, default)))
    except ValueError:
        return default


class _Nvtx:
    """push/pop/mark through torch.cuda.nvtx when it works, else ctypes on libnvtx3interop; else no-ops."""

    def __init__(self):
        self.backend = "unbound"
        self.torch = None

    def bind_lazily(self, torch):
        # Binding calls NVTX, which loads the agent and opens a capture file: wait for the first real range,
        # so processes that import torch but never train (torchrun's launcher, tools) leave no file.
        self.torch = torch

        def first(name):
            def call(*args):
                self.bind(self.torch)
                return getattr(self, name)(*args)
            return call

        self.push, self.pop, self.mark = first("push"), first("pop"), first("mark")

    def bind(self, torch):
        try:
            nv = torch.cuda.nvtx
            nv.mark("profile_train:probe")  # a control mark: the agent ignores it (raises if NVTX is absent)
            self.push, self.pop, self.mark = nv.range_push, nv.range_pop, nv.mark
            self.backend = "torch.cuda.nvtx"
            return
        except Exception:
            pass
        candidates = []
        for base in sys.path:
            candidates += glob.glob(os.path.join(base, "nvidia", "cu*", "lib", "libnvtx3interop.so*"))
        candidates += ["libnvtx3interop.so.1", "/usr/local/cuda/lib64/libnvtx3interop.so.1"]
        for c in candidates:
            try:
                lib = ctypes.CDLL(c)
                lib.nvtxRangePushA.argtypes = [ctypes.c_char_p]
                lib.nvtxMarkA.argtypes = [ctypes.c_char_p]
                self.push = lambda m, _f=lib.nvtxRangePushA: _f(m.encode())
                self.pop = lib.nvtxRangePop
                self.mark = lambda m, _f=lib.nvtxMarkA: _f(m.encode())
                self.backend = "ctypes:" + c
                return
            except Exception:
                continue
        self.push = self.pop = self.mark = lambda *a: None


class _Loop:
    """The step model's state of one thread (see _Shim.loop): each thread that trains has its own steps."""

    def __init__(self):
        self.step_open = False
        self.step_index = 0
        self.loader_mode = False     # steps are delimited by DataLoader iterations
        self.work_in_step = False    # the open step ran a forward or backward (a fetch before that is a prefetch)
        self.backward_in_step = False
        self.opt_bounded = False     # loader mode after the first optimizer step: a step ends at the optimizer step
        self.opt_done = False        # the open step's optimizer step ran (loader mode: it ends at the next fetch)
        self.backwards_since_opt = 0
        self.optimizer_ids = set()
        self.fwd_depth = 0
        self.bwd_depth = 0
        self.model_id = None         # this thread's top-level model
        self.not_models = set()      # ids of modules of another thread's model (checkpoint recomputation)


# The _Shim attributes that are the calling thread's (_Loop's); the rest is the process's.
_PER_THREAD = tuple(_Loop().__dict__)


def _per_thread(name):
    return property(lambda self: getattr(self.loop(), name), lambda self, v: setattr(self.loop(), name, v))


def _load_sibling(name):
    """A module from the file next to this one, by path: a user's module of the same name on sys.path cannot
    shadow it."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(name, os.path.join(here, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_FACTS_MODULE = "profile_train_facts"  # the facts, the loss and the memory hooks of _Shim, next to this file
_FACTS = _load_sibling(_FACTS_MODULE)
_FACTS.load_sibling = _load_sibling


class _Shim(_FACTS.FactsMixin):
    def __init__(self):
        self.nvtx = _Nvtx()
        self.out = os.environ.get("PROFILE_TRAIN_OUT", "")
        self.warmup = _env_int("PROFILE_TRAIN_WARMUP_STEPS")
        self.steps = _env_int("PROFILE_TRAIN_STEPS")
        self.stop_after = os.environ.get("PROFILE_TRAIN_STOP_AFTER_STEPS") == "1"
        # Per-module ranges, opt-in: PROFILE_TRAIN_MODULE_RANGES=DEPTH[,backward] (1 = the model's direct
        # children, 2 = one level further, ...; 0 = off; deeper means more ranges): forward ranges
        # "nn.Module: <name>", with ",backward" also "nn.Module backward: <name>" (profile_train_module_ranges.py).
        self.module_depth, self.module_backward, unknown = _module_ranges_spec(
            os.environ.get("PROFILE_TRAIN_MODULE_RANGES", ""))
        self.module_bw = None
        self.overrides = _read_overrides()
        self.pid = os.getpid()
        self.is_worker = False
        self.active = True          # False once warmup + steps were emitted (bounded capture)
        self.tls = threading.local()
        self.loops = []              # every thread's _Loop (steps_seen)
        self.models = []             # weak references to the threads' top-level models
        self.autocast_ctx = None
        self.facts = {"capture": {"shim": True, "warmup_steps": self.warmup, "steps": self.steps}}
        if self.overrides:
            self.facts["overrides"] = dict(self.overrides)
        self.facts_requested_at = 0.0
        self.facts_key = None        # the facts last written, less steps_seen (write on change)
        self.facts_text = None
        self.cuda_device = None      # the training thread's current device (CUDA's is per thread)
        self.writer = None           # the facts writer thread
        self.writer_wake = threading.Event()
        self.write_lock = threading.Lock()
        self.torch = None
        self.lock = threading.Lock()
        self.errors = []
        self.memory = None           # profile_train_memory.MemoryFacts, made by memory_hook on first use
        self.memory_failed = False
        # The training loss (the quality guard of `tune`): the scalar tensors backward() is called on, kept
        # detached on their device and read back in one batch (loss_flush), never one host sync per step.
        self.loss_pending = []       # [(step index, detached scalar tensor)] not read back yet
        self.loss_steps = {}         # step index -> [sum of the losses read back, backward calls]
        self.loss_not_scalar = 0     # backward() calls on a non-scalar tensor or a sequence (not recorded)
        for word in unknown:
            self.note_error("module_ranges", ValueError("unknown option %r (known: backward)" % word))

    # ---- threads ------------------------------------------------------------------------------------------
    def loop(self):
        """The calling thread's step-model state (created on its first call)."""
        lp = getattr(self.tls, "loop", None)
        if lp is None:
            lp = self.tls.loop = _Loop()
            with self.lock:
                self.loops.append(lp)
        return lp

    def training_thread(self):
        """Whether the calling thread may train: any thread but the shim's own facts writer."""
        return self.writer is None or threading.current_thread() is not self.writer

    def steps_seen(self):
        return max([lp.step_index for lp in list(self.loops)] or [0])

    def take_model(self, module):
        """Whether `module`, called with no forward open on this thread, is this thread's top-level model: the
        first module with parameters the thread calls, unless it belongs to another thread's model (activation
        checkpointing recomputes submodules on autograd's threads). The first model is noted in the facts."""
        lp = self.loop()
        if id(module) in lp.not_models:
            return False
        try:
            if next(module.parameters(), None) is None:
                return False
        except Exception:
            return False
        with self.lock:
            others = [r() for r in self.models]
        for m in others:
            if m is not None and m is not module and any(sub is module for sub in m.modules()):
                lp.not_models.add(id(module))
                return False
        lp.model_id = id(module)
        with self.lock:
            first = not self.models
            try:
                self.models.append(weakref.ref(module))
            except TypeError:
                self.models.append(lambda m=module: m)
        if first:
            self.note_model(module)
        return True

    # ---- ranges -------------------------------------------------------------------------------------------

    def open_step(self):
        if self.step_open:
            self.nvtx.pop()
            self.step_open = False
        if self.steps and self.step_index >= self.warmup + self.steps:
            if self.active:
                self.active = False
                self.loss_flush()
                self.nvtx.mark(_CONTROL_STOP)
                self.note_device()
                self.wake_writer()
            if self.stop_after and not self.is_worker and os.getpid() == self.pid:
                self.stop_after = False
                sys.stderr.write("profile-train: %d step(s) recorded (--stop-after-steps); ending the program\n"
                                 % self.steps)
                sys.stderr.flush()
                raise SystemExit(0)
            return
        self.memory_hook("at_step", self.step_index)
        self.nvtx.push("ProfilerStep#%d" % self.step_index)
        self.step_index += 1
        self.step_open = True
        self.work_in_step = False
        self.backward_in_step = False
        self.opt_done = False
        self.maybe_write_facts()

    def close_step(self, discard=False):
        if self.step_open:
            if discard:
                self.nvtx.mark(_CONTROL_DISCARD)
                self.step_index -= 1
            self.nvtx.pop()
            self.step_open = False

    # ---- the step model (where the ProfilerStep# ranges go; the analysis derives the report's steps from the
    # phase ranges, these bound the --warmup-steps/--steps window) ------------------------------------------
    def step_at_fetch(self):
        """A DataLoader fetch opens a step, unless the open one still needs it: it has run no forward or backward
        yet (a prefetching loader, e.g. accelerate's, fetches batch k+1 before step k runs), or optimizer steps
        bound the steps and its optimizer step has not run yet (gradient accumulation's micro-batches; an
        evaluation pass, which the analysis leaves out). Before the first optimizer step each fetch that follows
        training work opens a step: whether an optimizer step will come is not known yet."""
        if self.step_open and not self.opt_done and (not self.work_in_step or self.opt_bounded):
            return
        self.open_step()

    def step_at_work(self, training=False):
        """Forward, backward, zero_grad or an optimizer step with no step open opens one (no DataLoader, or the
        first work after an optimizer step ended the previous one)."""
        if not self.step_open and (not self.loader_mode or self.opt_bounded):
            self.open_step()
        if training:
            self.work_in_step = True

    def step_at_forward(self):
        """Without a DataLoader and before any optimizer step (a manual update loop, or the micro-batches before
        the first optimizer step), a forward after a backward starts the next step."""
        if self.step_open and not self.loader_mode and self.backward_in_step and not self.optimizer_ids:
            self.open_step()
        self.step_at_work(training=True)

    def step_at_backward(self):
        self.step_at_work(training=True)
        self.backward_in_step = True
        self.backwards_since_opt += 1

    def step_after_optimizer(self, opt):
        """An optimizer step ends the step; with a DataLoader at the next fetch, so that a second optimizer on
        the same batch (a GAN's) stays in it. The backward passes since the previous optimizer step are the
        gradient accumulation, recorded while a single optimizer steps."""
        self.optimizer_ids.add(id(opt))
        if self.backwards_since_opt > 0:
            if len(self.optimizer_ids) == 1:
                self.facts["training"] = {"gradient_accumulation_steps": self.backwards_since_opt,
                                          "step_boundary": "optimizer step"}
            else:
                self.facts.pop("training", None)
        self.backwards_since_opt = 0
        if self.loader_mode:
            self.opt_bounded = True
            self.opt_done = True
        else:
            self.close_step()


for _name in _PER_THREAD:
    setattr(_Shim, _name, _per_thread(_name))

S = _Shim()
_PATCHES = "profile_train_patches"  # the patches into torch, in the file next to this one
_OVERRIDES = "profile_train_overrides"  # the knob overrides the patches apply, next to this one
_COMPILE = "profile_train_compile"  # torch.compile's facts (facts.compile), next to this one
_COMM = "profile_train_comm"  # torch.distributed's collectives (facts.collectives), next to this one


def _install(torch):
    _load_sibling(_PATCHES).install(torch, sys.modules[__name__])


class _TorchImportHook(importlib.abc.MetaPathFinder):
    """Installs the patches right after `import torch` finishes, so processes that never import torch pay
    nothing and the user's script needs no change."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        orig_exec = spec.loader.exec_module

        def exec_module(module):
            orig_exec(module)
            try:
                _install(module)
            except Exception as e:  # never break the user's import
                sys.stderr.write("profile-train shim: disabled (%r)\n" % (e,))

        spec.loader.exec_module = exec_module
        return spec


_installed = False


def _without_shim_frames(tb):
    """The traceback chain with this file's frames unlinked (tb_next is writable): the user's traceback shows
    their code and torch's, not the wrappers around nn.Module.__call__, backward and DataLoader.__next__."""
    here = os.path.abspath(__file__)
    if here.endswith((".pyc", ".pyo")):
        here = here[:-1]
    ours = {here} | {os.path.join(os.path.dirname(here), name + ".py") 
            for name in (_PATCHES, _OVERRIDES, _COMPILE, _COMM, _FACTS_MODULE, _FACTS._MODULE_RANGES,
                         _FACTS._MEMORY)}
    kept = []
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) not in ours:
            kept.append(tb)
        tb = tb.tb_next
    for a, b in zip(kept, kept[1:] + [None]):
        a.tb_next = b
    return kept[0] if kept else None


def _install_excepthook():
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        try:
            seen = set()
            e = exc
            while e is not None and id(e) not in seen:  # the cause/context chain, as printed
                seen.add(id(e))
                if e.__traceback__ is not None:
                    e.__traceback__ = _without_shim_frames(e.__traceback__)
                e = e.__cause__ or e.__context__
            tb = exc.__traceback__ if exc is not None else _without_shim_frames(tb)
        except Exception:
            pass  # never lose the user's traceback over this
        previous(exc_type, exc, tb)

    sys.excepthook = hook


def install():
    global _installed
    if _installed or os.environ.get("PROFILE_TRAIN_SHIM", "1") == "0":
        return
    _installed = True
    _install_excepthook()
    if "torch" in sys.modules:
        _install(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchImportHook())
