"""The explainer of a config entry, handed to an evaluator that explains again.

Robustness and randomisation metrics (EvaluatorSpec.needs_explainer) call the explainer on inputs they
make: perturbed images, a randomised model, another class. `ExplainAgain` is that explainer bound to
what its stored maps were made with: the entry's name and settings (build_explainer), its per-image seeds
(the explain job's seed key and the image id: a perturbed copy of image i is explained with image i's
seeds, so a stochastic explainer's own noise does not count as the input's effect), and, for an
explainer that reads ground-truth masks (oracle, background), the image's mask.

Before any score, `check_reproduces` explains the unperturbed images again and compares them with the
stored maps: a metric that compared maps of a different explainer (other settings, seeds, model) would
measure the drift, not the property. A mismatch is an error naming the explainer, never a NaN score.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch

# How closely the map explained again must match the stored one, per image:
#   max |a - stored| <= REPRODUCE_RTOL * max |stored| + REPRODUCE_ATOL.
# The same entry, seeds, model and images give the same map up to float32 reordering: the explain and the
# evaluate job may cut batches differently and run other kernels (threads, GPU atomics), which moves a
# gradient map by ~1e-6 of its range; a changed setting, seed or model moves it by percents. 1e-3 of the
# map's largest value keeps the two apart. Stochastic explainers are held to the same bound: they are
# re-seeded with their explain job's per-image seeds, so only an explainer whose noise ignores its seeds
# fails. REPRODUCE_ATOL: an all-zero stored map is matched by a map within float32 noise of zero.
REPRODUCE_RTOL = 1e-3
REPRODUCE_ATOL = 1e-7


class ReproductionError(ValueError):
    """The explainer, built again from its config entry, does not give the stored maps."""


class ExplainAgain:
    """explain(model, x, target, ids): the entry's explainer on any inputs, each row seeded (and masked)
    as the image whose id it carries (ids may repeat: several perturbations of one image)."""

    def __init__(
        self,
        name: str,
        explainer,
        seeds: Optional[dict] = None,
        masks: Optional[dict] = None,
        where: str = "",
    ):
        self.name = name
        self.explainer = explainer
        self.seeds = seeds  # {image id: int seed}; None: the explainer's own (unseeded) behaviour
        self.masks = masks  # {image id: (H, W) mask} for an explainer that uses masks
        self.where = where  # how the error names where it came from (config key, argument)

    def __call__(self, model, x: torch.Tensor, target: torch.Tensor, ids: Sequence[int]) -> torch.Tensor:
        ids = [int(i) for i in ids]
        seeds = None if self.seeds is None else [self.seeds[i] for i in ids]
        kwargs = {}
        if getattr(self.explainer, "uses_masks", False):
            if self.masks is None:
                raise ValueError(f"explainer {self.name!r} reads ground-truth masks and none were given")
            kwargs["masks"] = torch.stack([torch.as_tensor(self.masks[i]) for i in ids])
        with torch.enable_grad():
            a = self.explainer.explain(model, x, target, seeds=seeds, **kwargs)
        return a.detach().float()

    def check_reproduces(self, model, x, target, ids, stored: torch.Tensor) -> None:
        """Raise ReproductionError unless the explainer gives `stored` again on (x, target) (per image,
        within REPRODUCE_RTOL of the map's largest |value|)."""
        again = self(model, x, target, ids).to(stored.device)
        stored = stored.float()
        diff = (again - stored).abs().flatten(1).amax(1)
        scale = stored.abs().flatten(1).amax(1)
        bound = REPRODUCE_RTOL * scale + REPRODUCE_ATOL
        bad = torch.nonzero(~(diff <= bound)).flatten().tolist()  # NaN fails too
        if bad:
            j = bad[0]
            raise ReproductionError(
                f"explainer {self.name!r}{self.where}: built again from its entry, it does not reproduce its "
                f"stored maps on {len(bad)} of {len(ids)} image(s) (ids {[int(ids[k]) for k in bad[:10]]}; "
                f"image {int(ids[j])}: max |difference| {float(diff[j]):.3g} > {float(bound[j]):.3g} = "
                f"{REPRODUCE_RTOL:g} x its largest |value| {float(scale[j]):.3g}); a metric that explains "
                f"again would score another map. Its settings, seeds or model changed since the maps were "
                f"made (rerun its explain jobs), or its noise does not follow the per-image seeds it is given"
            )


def explain_again(
    name: str,
    settings: Optional[dict],
    seed_key: tuple,
    ids: Sequence[int],
    references: Optional[torch.Tensor] = None,
    masks=None,
    base=None,
    where: str = "",
    explainer=None,
) -> ExplainAgain:
    """The entry's explainer as its explain job built it (explain_shard): build_explainer(name, settings),
    prepare(references) (the evaluated set, for methods that draw baselines from it), per-image seeds
    derive_seed(*seed_key, id). masks: (N, H, W) in ids' order, for an explainer that uses masks.
    explainer: an Explainer instance to use instead of building one (the Python API's)."""
    from fudbench.core.seeding import derive_seed
    from fudbench.explainers import build_explainer

    explainer = build_explainer(name, dict(settings or {}), base) if explainer is None else explainer
    if references is not None:
        explainer.prepare(references)
    ids = [int(i) for i in ids]
    seeds = {i: derive_seed(*seed_key, i) for i in ids}
    by_id = None if masks is None else {i: torch.as_tensor(m) for i, m in zip(ids, masks)}
    return ExplainAgain(name, explainer, seeds, by_id, where)
