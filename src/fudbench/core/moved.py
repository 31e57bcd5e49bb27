"""Packages that were modules before 0.2.0 (fudbench.config, fudbench.assets) hand out the names of the
module that took their code, so `from fudbench.config import validate_config` keeps working."""


def names_of(package: str, module: str):
    """A module-level __getattr__ for `package` that looks names up in `module` (imported on first use)."""

    def __getattr__(name):
        import importlib

        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(importlib.import_module(module), name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
