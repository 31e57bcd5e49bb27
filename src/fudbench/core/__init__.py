"""What every stage shares; the lowest floor: imports nothing else of fudbench.

- the science's primitives: checks.py (the one input check at the library boundary), seeding.py and
  fingerprint.py (seeds from the global seed and a job's identity; fingerprints of config values),
  masks.py and superpixels.py (attribution -> pixel order -> keep-masks; regions), auc.py (areas under
  curves)
- declaring and finding components: settings.py (settings declared once, as dataclasses; the config
  schema is generated from them), registry.py and plugins.py (name -> "module:attr" registries; a
  researcher's own object by import path), paths.py (paths in a config)
- moved.py: the old names of packages that were modules before 0.2.0
- the machine and files: batching.py (batches that survive out-of-memory), device.py, hardware.py (what
  the CPU/GPU computes natively; provenance), io.py and damage.py (atomic writes; the damage ledger),
  lockfile.py (requirements.lock's pins), bars.py (progress: a bar in a terminal, plain lines in a log)
"""
