"""profile-train: installs the Python shim (profile_train_shim.py, next to this file), then chains to any other
sitecustomize module that this one shadows on sys.path, so a user's or a distribution's sitecustomize still runs."""


def _profile_train_bootstrap():
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        if here not in sys.path:
            sys.path.append(here)
        import profile_train_shim
        profile_train_shim.install()
    except Exception as e:  # never break the interpreter start-up
        sys.stderr.write("profile-train shim: not installed (%r)\n" % (e,))

    # Chain: find the next sitecustomize on sys.path, skipping this folder.
    try:
        others = [p for p in sys.path if os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
        if spec is not None and spec.loader is not None and os.path.abspath(spec.origin or "") != \
                os.path.abspath(__file__):
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
    except Exception as e:
        sys.stderr.write("profile-train shim: the chained sitecustomize failed (%r)\n" % (e,))


_profile_train_bootstrap()
del _profile_train_bootstrap
