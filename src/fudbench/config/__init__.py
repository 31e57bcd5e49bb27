"""A run's configuration: the config files given, merged and validated before any job.

- files.py: config files from the command line, merged in order over config/config.yaml
- validate.py: the JSON-schema validation (errors name the key) and the checks a schema cannot express,
  asking each stage's torch-free spec (data, models, explainers, imputers, evaluators)
- names.py: config names that become paths (run_name, entries)
- cli.py: command-line values of the tools and benchmarks

Torch-free: the Snakefile reads it at parse time. Floor 5: above the stages it checks (core ... evaluators),
below analysis, report and workflow. `from fudbench.config import validate_config, ConfigError` keeps working (names of validate.py).
"""


def __getattr__(name):  # the names of validate.py, as when fudbench.config was one module
    import importlib

    if name.startswith("__"):
        raise AttributeError(name)
    validate = importlib.import_module("fudbench.config.validate")
    try:
        return getattr(validate, name)
    except AttributeError:
        raise AttributeError(f"module 'fudbench.config' has no attribute {name!r}") from None
