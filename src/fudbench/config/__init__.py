"""A run's configuration: the config files given, merged and validated before any job.

- files.py: config files from the command line, merged in order over config/config.yaml
- validate.py: the JSON-schema validation (errors name the key) and the checks a schema cannot express,
  asking each stage's torch-free spec (data, models, explainers, imputers, evaluators)
- names.py: config names that become paths (run_name, entries)
- cli.py: command-line values of the tools and benchmarks

Torch-free: the Snakefile reads it at parse time. Floor 5: above the stages it checks (core ... evaluators),
below analysis, report and workflow. `from fudbench.config import validate_config, ConfigError` keeps working (names of validate.py).
"""

from fudbench.core.moved import names_of

__getattr__ = names_of(
    __name__, "fudbench.config.validate"
)  # the names of validate.py, as when this package was one module
