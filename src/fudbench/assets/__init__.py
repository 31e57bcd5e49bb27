"""External assets of the paper profile: checked before any job (check.py; `python -m fudbench.assets
CONFIG`), and stand-ins with random contents for tests and the GPU suite (stand_ins.py).

Floor 6, beside analysis: imports the floors below (core, data, models, config).
"""


def __getattr__(name):  # the names of check.py, as when fudbench.assets was one module
    import importlib

    if name.startswith("__"):
        raise AttributeError(name)
    check = importlib.import_module("fudbench.assets.check")
    try:
        return getattr(check, name)
    except AttributeError:
        raise AttributeError(f"module 'fudbench.assets' has no attribute {name!r}") from None
