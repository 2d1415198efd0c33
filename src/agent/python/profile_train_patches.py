"""profile-train Python shim, part 2: the patches into torch that emit the step and phase ranges and collect the
DataLoader, optimizer and AMP facts (profile_train_shim.py holds the state, the step model and the facts file;
it loads this file next to it and calls install() once torch is imported).

  - DataLoader.__init__ / __iter__ / iterator __next__: overrides, facts, step boundaries and data-wait ranges
  - DataLoader worker loop and fetchers: fetch ranges in worker processes, a finalize mark before os._exit
  - nn.Module.__call__ of the top-level model: the forward range (and autocast when an amp override asks)
  - Tensor.backward / autograd.backward: the backward range
  - optimizer step hooks and Optimizer.zero_grad: their ranges, optimizer facts, steps bounded by optimizer steps
  - GradScaler.__init__: AMP facts; at exit: the open step dropped, the facts file, the agent's final flush
  - torch.distributed's collective functions and DistributedDataParallel's comm hook: facts.collectives
    (profile_train_comm.py; PROFILE_TRAIN_COLLECTIVES=0 turns it off)
  - the knob overrides beyond the DataLoader's and autocast (apply_* in profile_train_overrides.py): threads and backend flags at import,
    channels_last and torch.compile on the top-level model at its first call, foreach / fused at an optimizer's
    construction; each one applied is noted in facts.overrides_applied, each one that cannot act on this program
    in facts.overrides_failed with the reason (the program runs on without it; the tuner fails that trial)
Every wrapper calls through to torch's own function when the shim is inactive, in a worker or on the shim's own
thread; each other thread that trains has its own steps (the shim's per-thread state). A failure in a fact is
noted in the facts file, never raised into the user's program.
"""

import atexit
import importlib
import inspect
import os


def install(torch, shim):
    """Patches torch for the shim module `shim` (its state S and the protocol's constants)."""
    ov = shim._load_sibling(shim._OVERRIDES)  # the knob overrides (profile_train_overrides.py)
    S = shim.S
    _OVERRIDE_KEYS, _OVERRIDE_BATCH_SIZE = shim._OVERRIDE_KEYS, shim._OVERRIDE_BATCH_SIZE
    _OVERRIDE_AMP = shim._OVERRIDE_AMP
    _CONTROL_FINALIZE = shim._CONTROL_FINALIZE
    S.torch = torch
    # torch.compile's facts: the wrapper notes each call and, on the first, hooks dynamo's logs and callbacks.
    S.compile_watch = shim._load_sibling(shim._COMPILE).CompileWatch(S.nvtx, S.steps_seen)
    S.compile_watch.wrap_compile(torch)
    # torch.distributed's collectives (facts.collectives): its functions and DDP's gradient buckets, unless
    # PROFILE_TRAIN_COLLECTIVES=0 (then nothing of it is patched).
    if os.environ.get("PROFILE_TRAIN_COLLECTIVES", "1") != "0":
        try:
            S.comm_watch = shim._load_sibling(shim._COMM).CommWatch(S, torch)
            if not S.comm_watch.install():  # no torch.distributed in this build
                S.comm_watch = None
        except Exception as e:  # what was patched before the failure records; the facts say what failed
            S.note_error("collectives", e)
    S.nvtx.bind_lazily(torch)
    import torch.nn as nn
    import torch.utils.data.dataloader as dl
    import torch.utils.data._utils.worker as worker_mod
    import torch.utils.data._utils.fetch as fetch_mod
    opt_mod = importlib.import_module("torch.optim.optimizer")

    def after_fork_in_child():
        S.is_worker = True
        S.step_open = False
        S.active = True
        S.writer = None  # the parent's facts writer thread does not exist here

    os.register_at_fork(after_in_child=after_fork_in_child)
    ov.apply_process_overrides(torch, S)
    ov.install_optimizer_override(torch, S)

    # ---- DataLoader: overrides + facts ------------------------------------------------------------------
    orig_init = dl.DataLoader.__init__
    init_sig = inspect.signature(orig_init)

    def dl_init(self, *args, **kwargs):
        ov = S.overrides
        if ov and not S.is_worker:
            try:
                ba = init_sig.bind(self, *args, **kwargs)
                a = ba.arguments
                for key, name in _OVERRIDE_KEYS.items():
                    if name is not None and key != _OVERRIDE_BATCH_SIZE and key in ov:
                        a[name] = ov[key]
                if _OVERRIDE_BATCH_SIZE in ov and a.get("batch_sampler") is None and \
                        a.get("batch_size", 1) is not None:
                    a["batch_size"] = int(ov[_OVERRIDE_BATCH_SIZE])
                if int(a.get("num_workers", 0) or 0) == 0:
                    a["prefetch_factor"] = None
                    a["persistent_workers"] = False
                args, kwargs = ba.args[1:], ba.kwargs
            except Exception as e:
                S.note_error("overrides", e)
        orig_init(self, *args, **kwargs)

    dl.DataLoader.__init__ = dl_init

    def loader_facts(loader):
        try:
            S.facts["dataloader"] = {
                "num_workers": int(loader.num_workers),
                "pin_memory": bool(loader.pin_memory),
                "batch_size": loader.batch_size,
                "prefetch_factor": loader.prefetch_factor,
                "persistent_workers": bool(loader.persistent_workers),
            }
        except Exception as e:
            S.note_error("dataloader", e)

    orig_iter = dl.DataLoader.__iter__

    def dl_iter(self):
        # Start the agent before worker processes fork, so they inherit it and write their own files as
        # children of this process.
        if S.nvtx.backend == "unbound" and not S.is_worker:
            S.nvtx.bind(torch)
        it = orig_iter(self)
        try:
            it._pt_loader = self
        except Exception:
            pass
        return it

    dl.DataLoader.__iter__ = dl_iter

    base_iter = dl._BaseDataLoaderIter
    orig_next = base_iter.__next__

    def it_next(self):
        if not S.active or S.is_worker or not S.training_thread():
            return orig_next(self)
        if not S.loader_mode:
            S.loader_mode = True
            S.close_step()
        loader = getattr(self, "_pt_loader", None)
        if loader is not None and "dataloader" not in S.facts:
            loader_facts(loader)
        S.step_at_fetch()
        if not S.active:
            return orig_next(self)
        S.nvtx.push("enumerate(DataLoader)#%s.__next__" % type(self).__name__)
        try:
            batch = orig_next(self)
        except StopIteration:
            S.nvtx.pop()
            S.close_step(discard=True)
            raise
        except BaseException:
            S.nvtx.pop()
            raise
        S.nvtx.pop()
        return batch

    base_iter.__next__ = it_next

    # ---- worker processes: fetch ranges, flush before os._exit ----------------------------------------------
    orig_worker_loop = worker_mod._worker_loop

    def worker_loop(*args, **kwargs):
        S.is_worker = True
        try:
            return orig_worker_loop(*args, **kwargs)
        finally:
            # The worker leaves through os._exit next: write everything and the final status now.
            S.nvtx.mark(_CONTROL_FINALIZE)

    worker_mod._worker_loop = worker_loop

    for cls_name in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        cls = getattr(fetch_mod, cls_name, None)
        if cls is None:
            continue
        orig_fetch = cls.fetch

        def fetch(self, index, _orig=orig_fetch):
            if not S.is_worker:
                return _orig(self, index)
            S.nvtx.push("## dataloader worker fetch ##")
            try:
                return _orig(self, index)
            finally:
                S.nvtx.pop()

        cls.fetch = fetch

    # ---- forward -----------------------------------------------------------------------------------------
    orig_call = nn.Module.__call__

    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)

    def module_call(self, *args, **kwargs):
        # While torch.compile traces a model (the compile override, or the user's own), the submodules' calls are
        # traced straight through: is_compiling() is a constant to the tracer, so none of the shim enters the graph.
        if is_compiling():
            return orig_call(self, *args, **kwargs)
        if S.fwd_depth or not S.active or S.is_worker or not S.training_thread():
            return orig_call(self, *args, **kwargs)
        if S.model_id is None:
            if not S.take_model(self):
                return orig_call(self, *args, **kwargs)
            if len(S.models) == 1:  # the process's first model (a second training thread's keeps its own)
                ov.apply_model_overrides(torch, S, self)
        if id(self) != S.model_id:
            return orig_call(self, *args, **kwargs)
        if getattr(S, "cl_inputs", False):
            args, kwargs = ov.channels_last_inputs(torch, args, kwargs)
        S.step_at_forward()
        S.memory_hook("on_forward", args, kwargs)
        S.fwd_depth += 1
        S.nvtx.push("## forward ##")
        try:
            amp = S.overrides.get(_OVERRIDE_AMP)
            device_type = S.facts.get("params", {}).get("device") or "cpu"
            device_type = device_type.split(":")[0]
            compiled = getattr(S, "compiled_model", None) is not None and id(self) == S.compiled_id
            call = compiled_call if compiled else orig_call
            if amp in ("bf16", "fp16", "off"):
                dtype = torch.bfloat16 if amp == "bf16" else torch.float16
                with torch.autocast(device_type=device_type, dtype=dtype, enabled=(amp != "off")):
                    S.note_autocast(device_type)
                    out = call(self, *args, **kwargs)
                # The program computes its loss after the model returns, outside this autocast: half-precision
                # outputs go back to fp32 there, as autocast itself does for its fp32 ops (mse_loss of a bf16
                # prediction and an fp32 target failed in backward: "Found dtype Float but expected BFloat16").
                return ov.to_fp32(torch, out, dtype) if amp != "off" else out
            if "amp" not in S.facts or S.step_index <= 2:
                S.note_autocast(device_type)
            return call(self, *args, **kwargs)
        finally:
            S.nvtx.pop()
            S.fwd_depth -= 1
            if S.module_bw is not None:
                S.module_bw.forward_done()

    def compiled_call(self, *args, **kwargs):
        """The model through its torch.compile wrapper (the compile override). Its first calls trace and generate
        code: a failure there is the override's, not the program's: noted, the wrapper dropped, the call made
        again on the model as the program wrote it."""
        compiled = S.compiled_model
        if not S.compile_pending:
            return compiled(*args, **kwargs)
        try:
            out = compiled(*args, **kwargs)
        except Exception as e:
            S.compiled_model = None
            S.compile_pending = False
            ov.override_failed(S, ov._COMPILE, "torch.compile failed: %s" % ov._short(e))
            S.facts.setdefault("model", {})["compiled"] = None
            return orig_call(self, *args, **kwargs)
        S.compile_calls = getattr(S, "compile_calls", 0) + 1
        if S.compile_calls >= 2:
            S.compile_pending = False
        return out

    nn.Module.__call__ = module_call

    # ---- backward ----------------------------------------------------------------------------------------
    def wrap_backward(fn):
        def backward(*args, **kwargs):
            if S.bwd_depth or not S.active or S.is_worker or not S.training_thread():
                return fn(*args, **kwargs)
            S.step_at_backward()
            S.memory_hook("on_backward", args, kwargs)
            S.note_loss(args, kwargs)
            S.bwd_depth += 1
            S.nvtx.push("## backward ##")
            try:
                return fn(*args, **kwargs)
            finally:
                if S.module_bw is not None:
                    S.module_bw.backward_returned()
                S.nvtx.pop()
                S.bwd_depth -= 1
        backward.__wrapped__ = fn
        backward.__doc__ = fn.__doc__
        return backward

    torch.Tensor.backward = wrap_backward(torch.Tensor.backward)
    torch.autograd.backward = wrap_backward(torch.autograd.backward)

    # ---- optimizer ---------------------------------------------------------------------------------------
    def optimizer_facts(opt):
        """Every optimizer that steps (GANs and actor-critic loops have two or more), from its parameter groups:
        a group's own value overrides the defaults (nanoGPT decays 0.1/0.0 per group with a default of 0.01).
        facts.optimizer is the first one; weight_decay there is the largest over its groups."""
        try:
            d = getattr(opt, "defaults", {}) or {}
            groups = list(getattr(opt, "param_groups", []) or [])

            def per_group(key):
                vals = [g.get(key, d.get(key)) for g in groups] or [d.get(key)]
                return [v if isinstance(v, (bool, int, float)) or v is None else str(v) for v in vals]

            wd = [v for v in per_group("weight_decay") if isinstance(v, (int, float)) and not isinstance(v, bool)]
            foreach, fused = per_group("foreach"), per_group("fused")
            rec = {"class": type(opt).__name__,
                   "foreach": foreach[0] if len(set(map(repr, foreach))) == 1 else None,
                   "fused": fused[0] if len(set(map(repr, fused))) == 1 else None,
                   "weight_decay": max(wd) if wd else None,
                   "weight_decay_groups": per_group("weight_decay"),
                   "lr_groups": per_group("lr"),
                   "param_groups": len(groups),
                   "params": int(sum(len(g.get("params", [])) for g in groups))}
            rec.update(ov.optimizer_takes(torch, opt))
            if "optimizer" not in S.facts:
                S.facts["optimizer"] = {k: rec[k] for k in ("class", "foreach", "fused", "weight_decay",
                                                            "weight_decay_groups", "param_groups",
                                                            "takes_foreach", "takes_fused")}
                ov.check_optimizer_override(S, opt)
            seen = S.facts.setdefault("optimizers", [])
            if len(seen) < 16:  # a loop that builds a new optimizer every step must not grow the facts file
                seen.append(rec)
            else:
                S.facts["optimizers_not_listed"] = S.facts.get("optimizers_not_listed", 0) + 1
        except Exception as e:
            S.note_error("optimizer facts", e)

    def pre_step(opt, args, kwargs):
        if not S.active or S.is_worker or not S.training_thread():
            return
        if not getattr(opt, "_pt_facts", False):
            opt._pt_facts = True
            optimizer_facts(opt)
        S.step_at_work()
        S.nvtx.push("Optimizer.step#%s.step" % type(opt).__name__)
        opt._pt_step_range = True

    def post_step(opt, args, kwargs):
        if not getattr(opt, "_pt_step_range", False):
            return
        opt._pt_step_range = False
        S.nvtx.pop()
        S.memory_hook("on_optimizer_step", opt)
        S.step_after_optimizer(opt)

    opt_mod.register_optimizer_step_pre_hook(pre_step)
    opt_mod.register_optimizer_step_post_hook(post_step)

    orig_zero = opt_mod.Optimizer.zero_grad

    def zero_grad(self, *args, **kwargs):
        if not S.active or S.is_worker or not S.training_thread():
            return orig_zero(self, *args, **kwargs)
        S.step_at_work()
        S.nvtx.push("Optimizer.zero_grad#%s.zero_grad" % type(self).__name__)
        try:
            return orig_zero(self, *args, **kwargs)
        finally:
            S.nvtx.pop()

    opt_mod.Optimizer.zero_grad = zero_grad

    # ---- GradScaler --------------------------------------------------------------------------------------
    try:
        scaler_cls = torch.amp.GradScaler
        orig_scaler_init = scaler_cls.__init__

        def scaler_init(self, *args, **kwargs):
            orig_scaler_init(self, *args, **kwargs)
            S.facts.setdefault("amp", {})["grad_scaler"] = bool(getattr(self, "_enabled", True))

        scaler_cls.__init__ = scaler_init
    except Exception as e:
        S.note_error("grad_scaler", e)

    def at_exit():
        if S.is_worker:
            return
        if S.step_open:
            # A step still open at exit was cut short (the loop broke out, or an exception): it ends with whatever
            # ran after the loop (evaluation, checkpointing, teardown), so it is dropped rather than recorded.
            try:
                S.close_step(discard=True)
            except Exception:
                pass
            S.step_open = False
        ov.overrides_never_reached(S)
        S.loss_flush()
        S.write_facts(force=True)
        # Final flush now: an interpreter ending on KeyboardInterrupt re-kills itself with SIGINT and never runs
        # the C atexit handlers where the agent would flush. Only where NVTX was used: a process that never
        # emitted a range (torchrun's launcher) must not start the agent just to say goodbye.
        if S.nvtx.backend != "unbound":
            try:
                S.nvtx.mark(_CONTROL_FINALIZE)
            except Exception:
                pass

    atexit.register(at_exit)
