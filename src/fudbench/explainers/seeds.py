"""The seed key of an explain job: which noise an explainer entry draws (per-image seeds add the image's id
through fudbench.core.seeding.derive_seed)."""

from __future__ import annotations

import json

from fudbench.explainers import WRAPPERS


def explainer_seed_name(entry: str, settings: dict | None = None) -> str:
    """The name an explainer entry's seeds are keyed by: its own name, except
    for a wrapper (degrade, randomise_model), which is keyed by its method, base
    and base settings. So the members of one family (ig_d20, ig_d40 ...) draw
    the same base-map noise and degrade the same pixel order (nested levels),
    and differ only by their level."""
    settings = settings or {}
    method = settings.get("method", entry)
    if method == "random_smooth":  # the scatter control smooths the `random` map itself: its seeds
        return "random"
    if method not in WRAPPERS:
        return entry
    base_settings = json.dumps(settings.get("base_settings") or {}, sort_keys=True)
    return f"{method}:{settings['base']}:{base_settings}"


def explain_seed_key(seed: int, seed_group: str, explainer: str, settings: dict | None = None) -> tuple:
    """The seed key of an explain job (per-image seeds add the image id): the
    model's seed group, not its name, so the seeds of one model get the same
    random maps, degrade noise, EG baselines ...; the explainer entry's name,
    or its family's for a wrapper (explainer_seed_name)."""
    return (seed, "explain", seed_group, explainer_seed_name(explainer, settings))
