"""fudbench: Faithfulness Under the Distribution and related attribution evaluations.

The packages, bottom floor first (docs/architecture.md; tests/test_architecture.py enforces that a
package imports only from packages on lower floors):
  core/        what every stage shares: checks, seeds, masks, settings, plug-ins, atomic writes  (floor 0)
  data/        the synthetic benchmark, image folders, ImageNet, shards              (floor 1)
  models/      classifiers (normalisation inside), score models, training, energies (floor 1)
  explainers/  attribution methods behind one interface + registry                 (floor 2)
  imputers/    how removed pixels are filled (baselines, diffusion / FUD)           (floor 2)
  protocols/   which pixels are removed, what is recorded; by category              (floor 3)
  evaluators/  the metrics: a torch-free spec and a build each; by category         (floor 4)
  config/      a run's config: files merged, validated against every stage's spec   (floor 5)
  analysis/    curve scores, Kendall tau, OOD detection, image quality, bootstrap   (floor 6)
  assets/      the paper profile's external files: checked, or stood in for        (floor 6)
  meta/        meta-evaluation: families of known order, gates, endpoint, claims    (floor 7)
  report/      LaTeX tables, figures, the results page                              (floor 8)
  workflow/    running the workflow's jobs: command line, job server, job functions (floor 9)
  api.py       fudbench.explain / evaluate / load_example: your own model and images (floor 10)
"""

__version__ = "0.2.0"

# Modules that moved when the library was regrouped (0.2.0): the old import path still works, with a
# DeprecationWarning naming the new one, until 0.3.0 (`python -m <old path>` too). fudbench.config and
# fudbench.assets, modules before, are packages now that hand out the names of config/validate.py and
# assets/check.py.
MOVED = {
    "configfiles": "config.files",
    "settings": "core.settings",
    "names": "config.names",
    "paths": "core.paths",
    "plugins": "core.plugins",
    "registry": "core.registry",
    "cli": "config.cli",
    "fingerprint": "core.fingerprint",
    "checks": "core.checks",
    "seeding": "core.seeding",
    "masks": "core.masks",
    "superpixels": "core.superpixels",
    "batching": "core.batching",
    "device": "core.device",
    "io": "core.io",
    "damage": "core.damage",
    "hardware": "core.hardware",
    "lockfile": "core.lockfile",
    "pipeline": "workflow.pipeline",
    "jobs": "workflow.jobs",
    "prefork": "workflow.prefork",
    "snakemake_main": "workflow.snakemake_main",
    "progress": "workflow.progress",
    "preflight": "workflow.preflight",
    "invocations": "workflow.invocations",
    "cost": "workflow.cost",
    "work_cache": "workflow.work_cache",
    "stand_ins": "assets.stand_ins",
    "analysis.meta": "meta.families",
    "analysis.order_stats": "meta.order_stats",
    "analysis.gate": "meta.gate",
    "analysis.endpoint": "meta.endpoint",
    "analysis.cue": "meta.cue",
    "analysis.claims": "meta.claims",
    "analysis.report_card": "meta.report_card",
    "analysis.reconstruction": "meta.reconstruction",
    "analysis.ranks": "meta.ranks",
    "analysis.inference": "meta.inference",
    "analysis.auc": "core.auc",
    "analysis.energy": "models.energy",
    "models.quality": "imputers.diffusion.quality",
    "analysis.sanity": "report.sanity",
    "evaluators.fud": "evaluators.faithfulness.fud",
    "evaluators.insdel": "evaluators.faithfulness.insdel",
    "evaluators.sensn": "evaluators.faithfulness.sensn",
    "evaluators.infid": "evaluators.faithfulness.infid",
    "evaluators.srg": "evaluators.faithfulness.srg",
    "evaluators.idsds": "evaluators.faithfulness.idsds",
    "evaluators.road": "evaluators.faithfulness.road",
    "evaluators.distill": "evaluators.faithfulness.distill",
    "evaluators.gevaert": "evaluators.faithfulness.gevaert",
    "evaluators.ffid": "evaluators.faithfulness.ffid",
    "evaluators.irof": "evaluators.faithfulness.irof",
    "evaluators.rma": "evaluators.localisation.rma",
    "protocols.topk": "protocols.faithfulness.topk",
    "protocols.sensitivity_n": "protocols.faithfulness.sensitivity_n",
    "protocols.infidelity": "protocols.faithfulness.infidelity",
    "protocols.srg": "protocols.faithfulness.srg",
    "protocols.road": "protocols.faithfulness.road",
    "protocols.idsds": "protocols.faithfulness.idsds",
    "protocols.ffidelity": "protocols.faithfulness.ffidelity",
    "protocols.irof": "protocols.faithfulness.irof",
    "protocols.stored": "protocols.faithfulness.stored",
    "protocols.rma": "protocols.localisation.rma",
}


def __getattr__(name):
    """fudbench.explain, fudbench.evaluate and fudbench.load_example (fudbench.api), imported on first
    use: importing fudbench itself stays torch-free (the Snakefile does at parse time)."""
    if name in ("explain", "evaluate", "load_example", "Example"):
        from fudbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'fudbench' has no attribute {name!r}")


class _MovedModules:
    """Import hook: `import fudbench.<old path>` gives the module at its new path (one module object,
    registered under both names)."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if not fullname.startswith("fudbench.") or fullname[len("fudbench.") :] not in MOVED:
            return None
        import importlib.util

        return importlib.util.spec_from_loader(fullname, _MovedModules)

    @staticmethod
    def create_module(spec):
        import importlib
        import sys
        import warnings

        new = "fudbench." + MOVED[spec.name[len("fudbench.") :]]
        warnings.warn(
            f"{spec.name} moved to {new} (fudbench 0.2.0); the old path goes in 0.3.0", DeprecationWarning, stacklevel=3
        )
        module = importlib.import_module(new)
        sys.modules[spec.name] = module
        return module

    @staticmethod
    def exec_module(module):
        pass

    @staticmethod
    def get_code(fullname):
        """`python -m <old path>`: run the module at its new path as __main__."""
        new = "fudbench." + MOVED[fullname[len("fudbench.") :]]
        return compile(
            f"import runpy\nrunpy.run_module({new!r}, run_name='__main__', alter_sys=True)", fullname, "exec"
        )


def _install_moved_modules():
    import sys

    if not any(isinstance(f, type) and f.__name__ == "_MovedModules" for f in sys.meta_path):
        sys.meta_path.append(_MovedModules)


_install_moved_modules()
