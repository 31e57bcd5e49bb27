"""Evaluators built from protocols and imputers, as named in config.

- fud:    keep-top-rho curve x diffusion imputer with anti-class guidance.
- insdel: RISE deletion (zero fill) and insertion (blurred substrate) curves
          over n_steps + 1 points, plus zero-fill deletion at the removal
          fractions 1 - rho (the intermediate samples compared with FUD's).
- sensn:  Sensitivity-N (Ancona 2017) at the removal fractions 1 - rho, zero fill.
- infid:  Infidelity (Yeh 2019) via captum, perturbation from config.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fudbench.imputers import BlurImputer, ZeroImputer
from fudbench.protocols import TopKCurve


@dataclass
class Evaluator:
    name: str
    curves: list  # [(TopKCurve, Imputer)]

    def run(self, model, x, y, attribution, image_ids, seed_key: tuple):
        """Returns (records DataFrame with a 'curve' column, {curve: samples})."""
        frames, samples = [], {}
        for protocol, imputer in self.curves:
            res = protocol.run(model, x, y, attribution, imputer, image_ids, (*seed_key, protocol.curve))
            frames.append(res.records)
            if res.samples is not None:
                samples[protocol.curve] = res.samples
                steps = res.records.drop_duplicates("step").sort_values("step")
                samples[f"removed_{protocol.curve}"] = steps["removed"].to_numpy()
        return pd.concat(frames, ignore_index=True), samples


def removal_fractions(ratios) -> list[float]:
    """Kept fractions rho -> the removal fractions 1 - rho, increasing."""
    return sorted(round(1 - r, 10) for r in ratios)


def build_fud(settings: dict, evaluation: dict, assets: dict, device) -> Evaluator:
    from fudbench.imputers.diffusion import DiffusionImputer
    from fudbench.imputers.resolution import bridge_resolution
    from fudbench.models.score import load_score_model

    unet, schedule = load_score_model(assets["score_model"], device)
    imputer = DiffusionImputer(unet, schedule, steps=settings["steps"],
                               guidance_scale=settings["guidance_scale"],
                               guidance_start=settings["guidance_start"],
                               known=settings["known"], clip_x0=settings["clip_x0"],
                               constraint=settings.get("constraint", "hard"),
                               soft_sigma=settings.get("soft_sigma", 0.1),
                               amp_dtype=settings.get("amp_dtype"),
                               channels_last=settings.get("channels_last", False),
                               compile=settings.get("compile", False))
    imputer = bridge_resolution(imputer, unet)  # e.g. 224 px images, 256 px U-Net (paper profile)
    curve = TopKCurve("fud", evaluation["ratios"], mode="keep", batch_size=settings["batch_size"],
                      reduction=evaluation["reduction"], keep_samples=True)
    return Evaluator("fud", [(curve, imputer)])


def build_insdel(settings: dict, evaluation: dict, assets: dict, device) -> Evaluator:
    grid = np.linspace(0, 1, settings["n_steps"] + 1).tolist()
    common = {"batch_size": settings["batch_size"], "reduction": evaluation["reduction"]}
    zero = ZeroImputer()
    return Evaluator("insdel", [
        (TopKCurve("deletion", grid, mode="remove", **common), zero),
        (TopKCurve("insertion", grid, mode="keep", **common),
         BlurImputer(settings["blur_kernel"], settings["blur_sigma"])),
        (TopKCurve("deletion_ratios", removal_fractions(evaluation["ratios"]), mode="remove",
                   keep_samples=True, **common), zero),
    ])


def build_sensn(settings: dict, evaluation: dict, assets: dict, device) -> Evaluator:
    from fudbench.protocols.sensitivity_n import SensitivityN

    protocol = SensitivityN(fractions=removal_fractions(evaluation["ratios"]), n_subsets=settings["n_subsets"],
                            batch_size=settings["batch_size"], keep_samples=True)
    return Evaluator("sensn", [(protocol, ZeroImputer())])


def build_infid(settings: dict, evaluation: dict, assets: dict, device) -> Evaluator:
    from fudbench.protocols.infidelity import Infidelity  # imports captum (seconds): only here

    protocol = Infidelity(perturbation=settings["perturbation"], n_perturb=settings["n_perturb"],
                          sigma=settings["sigma"], batch_size=settings["batch_size"], keep_samples=True)
    return Evaluator("infid", [(protocol, None)])
