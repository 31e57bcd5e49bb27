# Shared constants, wildcard constraints, resource helpers and targets.
from fudbench.meta.families import agreement_metrics
from fudbench.config.validate import fud_diagnostics_on, score_model_users
from fudbench.data.shards import n_shards
from fudbench.evaluators import entries_of, entry_curves, method_of, spec_of, use_plugins
from fudbench.core.fingerprint import score_model_training_inputs
from fudbench.core.plugins import absolute, entry_sources, is_import_path
from fudbench.report.captions import applies as report_applies, caption as report_caption
from fudbench.report.captions import ood_tex_caption, qualitative_curves, quality_tex_caption
from fudbench.report.paper_tables import appendix_caption, tables_of
from fudbench.core.seeding import seed_groups

RESULTS = f"results/{config['run_name']}"
# Plug-in evaluators (EvaluatorSpecs by import path, relative files from the repository): their curves join
# the catalogue the parse-time code and the analysis read (every job registers them too: scripts/_fudbench_path.py).
use_plugins(config["evaluators"], REPO)
MODELS = list(config["models"]["classifiers"])
# Identical classifier entries are training seeds of one model: their explain and
# evaluate noise is keyed by the group (the first of them), training by the name.
SEED_GROUPS = seed_groups(config["models"]["classifiers"])
EXPLAINERS = list(config["explainers"])
EVALUATORS = list(config["evaluators"])
# Evaluator entries that keep intermediate samples: only they get quality jobs (piq metrics of the samples).
SAMPLING_EVALUATORS = [e for e, s in config["evaluators"].items() if any(c.keeps_samples for c in entry_curves(e, s))]
SHARDS = list(range(n_shards(config["data"]["n_eval"], config["data"]["shard_size"])))
# GPU rules ask the scheduler for a GPU only when the run is meant for one.
GPU = 1 if config["device"] == "cuda" else 0
ENV_TORCH = "../envs/torch.yaml"
ENV_ANALYSIS = "../envs/analysis.yaml"
ENV_REPORT = "../envs/report.yaml"
# Explainers whose samples the pooled tables (2, 3, 8, 9, 11) use.
POOLED_EXPLAINERS = config["analysis"].get("pooled_explainers") or EXPLAINERS
# FUD diagnostics (rules/diagnostics.smk: Figs. 3, 5, 6, Tables 5 and 10) run when
# the config has the evaluator `fud`, analysis.diagnostics and analysis.timing;
# without `fud` they are left out of the DAG (fudbench.config.validate.fud_diagnostics_on).
DIAG = config["analysis"].get("diagnostics", {"explainer": None})
TIMING = config["analysis"].get("timing", {"model": None, "steps": []})
FUD_ON = fud_diagnostics_on(config)
# The report's tables and figures that apply to this run (fudbench.report.captions.applies): the others
# are left out of the targets, so that report.html has no empty section or caption naming what did not run.
REPORT_ITEMS = report_applies(config)


wildcard_constraints:
    model="|".join(MODELS),
    explainer="|".join(EXPLAINERS),
    evaluator="|".join(EVALUATORS),
    shard=r"\d+",


def repo_path(p):
    """Config paths are relative to the repository, not the working directory."""
    return str(Path(p) if Path(p).is_absolute() else REPO / p)


def explainer_settings(name):
    """A config entry's explainer settings as jobs get them: a plug-in's file path
    absolute (config paths are relative to the repository, jobs run elsewhere)."""
    settings = dict(config["explainers"][name])
    method = settings.get("method", name)
    if is_import_path(method):
        settings["method"] = absolute(method, REPO)
    return settings


def evaluator_settings(name):
    """A config entry's evaluator settings as jobs get them: the file paths of
    plug-in imputers (imputer_options' `method`) absolute, as explainer_settings does."""
    settings = dict(config["evaluators"][name])
    if settings.get("imputer_options"):
        settings["imputer_options"] = {
            imputer: {**o, "method": absolute(o["method"], REPO)} if is_import_path(o.get("method")) else o
            for imputer, o in settings["imputer_options"].items()
        }
    return settings


def plugin_inputs(settings):
    """The source files of an entry's plug-ins (its method, its imputers'), with the
    local modules they import (fudbench.core.plugins.plugin_sources: static, cached),
    inputs of its jobs: editing any of them reruns exactly these jobs."""
    return {f"plugin{i}": s for i, s in enumerate(entry_sources(settings, REPO))}


def explains_again(evaluator):
    """Whether a configured evaluator entry calls the explainer again (EvaluatorSpec.needs_explainer)."""
    settings = config["evaluators"][evaluator]
    return spec_of(evaluator, settings).explainer_needed(resolved_settings(evaluator))


def explainer_entries(evaluator):
    """The explainer entries' settings an evaluate job rebuilds them from, when its evaluator
    explains again (robustness, randomisation); {} for the others."""
    return {e: explainer_settings(e) for e in EXPLAINERS} if explains_again(evaluator) else {}


def explainer_plugin_inputs(evaluator):
    """The explainer plug-ins' sources, inputs of an evaluate job that explains again."""
    if not explains_again(evaluator):
        return {}
    files = dict.fromkeys(f for e in EXPLAINERS for f in entry_sources(config["explainers"][e], REPO))
    return {f"plugin_explainer{i}": f for i, f in enumerate(files)}


def job_params():
    """Values every library job needs (seed, device)."""
    return {"seed": config["seed"], "device": config["device"]}


def resolved_settings(evaluator):
    """A configured evaluator entry's settings over its spec's defaults."""
    settings = config["evaluators"][evaluator]
    return spec_of(evaluator, settings).resolve(settings)


def entry_assets(evaluator):
    """Asset keys a configured evaluator entry reads (its spec says which)."""
    return spec_of(evaluator, config["evaluators"][evaluator]).assets(resolved_settings(evaluator))


# The score model's own rules (train, verify or convert, check, samples figure) exist only
# when an evaluator reads it (FUD, its variants, diffusion fills): a run without them
# needs no models.score_model and no diffusion checkpoint (fudbench.config.validate.score_model_users).
SCORE_MODEL_USED = bool(score_model_users(config, REPO))


def asset_path(key, wildcards):
    """Where the workflow makes each asset an evaluator may read."""
    if key == "score_model":
        return f"{RESULTS}/models/score_model.pt"
    if key == "reference_images":  # train-set / dataset-mean fills
        return rules.make_dataset.output.train
    if key == "surrogate":  # F-Fidelity's fine-tuned surrogate (rules/ffidelity.smk)
        return f"{RESULTS}/models/{wildcards.model}_surrogate.pt"
    if key == "srg_reference":  # SRG's R-OMS records, computed once per model x shard (rule srg_reference)
        return f"{RESULTS}/srg_reference/{wildcards.evaluator}/{wildcards.model}/shard{wildcards.shard}.parquet"
    raise ValueError(f"evaluator {wildcards.evaluator!r} asks for asset {key!r}, which no rule makes")


# Assets shared by all models and shards (the srg_reference rule reads these too).
SHARED_ASSETS = ("score_model", "reference_images")


def protocol_assets(evaluator):
    """The shared files an evaluator entry's protocols read."""
    return {k: asset_path(k, None) for k in entry_assets(evaluator) if k in SHARED_ASSETS}


def evaluator_assets(wildcards):
    """The files an evaluate job reads besides model, images and attributions,
    so that e.g. retraining the score model reruns only the jobs that use it."""
    return {k: asset_path(k, wildcards) for k in entry_assets(wildcards.evaluator)}


def evaluate_outputs(kind, ext):
    """An evaluate job's per-explainer files (kind: records or samples): one job
    per model x evaluator x shard writes them for every explainer."""
    return expand(
        f"{RESULTS}/{kind}/{{{{model}}}}/{{explainer}}/{{{{evaluator}}}}/shard{{{{shard}}}}.{ext}",
        explainer=EXPLAINERS,
    )


def samples_kept_per_shard():
    """Images per shard whose intermediate samples an evaluate job keeps: those
    the quality jobs measure and the gallery shows (None = all)."""
    q = config["evaluation"]["quality"]["images_per_shard"]
    return None if q is None else max(q, config["evaluation"]["gallery_images"])


def figure_paths(stem):
    return expand(f"{RESULTS}/figures/{stem}.{{ext}}", ext=config["plots"]["formats"])


def reported_figure(stem, caption=None):
    """figure_paths(stem), the PNG (else the first format) flagged for `snakemake --report`."""
    paths = figure_paths(stem)
    shown = next((p for p in paths if p.endswith(".png")), paths[0])
    caption = f"../report/captions/{caption or stem}.rst"
    return [report(p, caption=caption, category="Figures") if p == shown else p for p in paths]


def reported_table(path, caption):
    """A table's CSV, flagged for `snakemake --report` (the LaTeX twin is not)."""
    return report(path, caption=f"../report/captions/{caption}.rst", category="Tables")


# The results page's reference map (rules/report.smk): the entry running `random`, None without one.
from fudbench.report.results_page import random_explainer

RANDOM_REFERENCE = random_explainer(config["explainers"])


def results_figure(stem, caption):
    """figure_paths(stem), the PNG (else the first format) in the report's Results category."""
    paths = figure_paths(stem)
    shown = next((p for p in paths if p.endswith(".png")), paths[0])
    captioned = f"../report/captions/{caption}.rst"
    return [report(p, caption=captioned, category="Results") if p == shown else p for p in paths]


def results_page_targets():
    """The results page's files (rules/report.smk): the report's front page, its table and figures."""
    return [
        f"{RESULTS}/tables/results.csv",
        f"{RESULTS}/tables/results_paired.csv",
        f"{RESULTS}/report/front.rst",
        *figure_paths("results_overview"),
        *(figure_paths("results_vs_random") if RANDOM_REFERENCE else []),
    ]


def table_paths(*stems):
    return expand(f"{RESULTS}/tables/{{stem}}.{{ext}}", stem=stems, ext=["tex", "csv"])


def diagnostics_targets():
    if not FUD_ON:
        return []
    return [
        *figure_paths("fig3_auroc_by_step"),
        *figure_paths("fig5_l2_by_step"),
        *figure_paths("fig6_final_l2"),
        f"{RESULTS}/tables/table5_constraint.tex",
        f"{RESULTS}/tables/table5_constraint.csv",
        f"{RESULTS}/tables/table10_timing.tex",
        f"{RESULTS}/tables/table10_timing.csv",
    ]


# Appendix tables, present when a configured evaluator writes curves they show.
APPENDIX_TABLES = ("srg_scores", "road_scores", "ffidelity_scores", "appendix_scores", "table9_quality", "table11_ood")


def configured_appendix_curves():
    """The configured curves the appendix score table shows, in config order."""
    from fudbench.evaluators import configured_curves

    return [c for c, spec in configured_curves(config["evaluators"]).items() if spec.table == "appendix_scores"]


def appendix_targets():
    present = tables_of(config["evaluators"])
    return table_paths(*[t for t in APPENDIX_TABLES if t in present])


def gate_input(gated):
    """The family gate's table where this run computes one (rules/meta.smk), else
    nothing (claims and the report card then say that no gate was applied)."""
    return [f"{RESULTS}/tables/family_gate.csv"] if gated else []


def meta_targets():
    """The meta-evaluation needs degraded explainers (rules/meta.smk)."""
    if not DEGRADED:
        return []
    return [
        *table_paths("meta_ground_truth"),
        *(
            [f"{RESULTS}/tables/metric_agreement.csv", *figure_paths("metric_agreement")]
            if len(agreement_metrics(config["evaluators"], config["analysis"].get("meta_metrics"))) >= 2
            else []
        ),
        *table_paths("report_card"),
        *figure_paths("report_card"),
        *table_paths("claims"),
        *(table_paths("family_gate") if GATED else []),
        *(table_paths("endpoint") if ENDPOINT else []),
    ]


def all_targets():
    return [
        f"{RESULTS}/models/quality.json",
        f"{RESULTS}/run_info.json",
        f"{RESULTS}/tables/run_info.csv",
        *results_page_targets(),  # rules/report.smk: the report's front page
        *[
            p
            for t in ("table4_kendall", "table7_scores", "table2_ood", "table8_ood", "table3_quality")
            if REPORT_ITEMS[t]
            for p in table_paths(t)
        ],
        *(figure_paths("fig2_quality_radar") if REPORT_ITEMS["fig2_quality_radar"] else []),
        *(figure_paths("confidence_vs_ratio") if REPORT_ITEMS["confidence_vs_ratio"] else []),
        *figure_paths("dataset_examples"),
        *(figure_paths("score_model_samples") if SCORE_MODEL_USED else []),
        *(
            figure_paths("qualitative_samples") + figure_paths("fig4_qualitative")
            if REPORT_ITEMS["qualitative"]
            else []
        ),
        *diagnostics_targets(),
        *appendix_targets(),
        *meta_targets(),
    ]
