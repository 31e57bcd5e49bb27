# Meta-evaluation: how well each metric recovers the known ranking of the
# families of known order (`method: degrade` and `method: randomise_model`
# entries of config["explainers"]; fudbench.meta.families), how much the
# metrics agree, and the report card that gathers both with the anchors' ranks,
# the power target, the seed spread and the cost.
from fudbench.meta.families import anchor_explainers, degraded_explainers

DEGRADED = degraded_explainers(config["explainers"])
# metrics in the meta-evaluation (curve or table names); None = every scored curve
META_METRICS = config["analysis"].get("meta_metrics")


rule meta_table:
    input:
        per_image=rules.aggregate_records.output.per_image,
        records=rules.aggregate_records.output.records,
    output:
        tex=f"{RESULTS}/tables/meta_ground_truth.tex",
        csv=reported_table(f"{RESULTS}/tables/meta_ground_truth.csv", "meta_ground_truth"),
    log:
        f"{RESULTS}/logs/meta_table.log",
    conda:
        ENV_ANALYSIS
    params:
        degraded={name: list(v) for name, v in DEGRADED.items()},
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
        seed=config["seed"],
        models=MODELS,
        metrics=META_METRICS,
    script:
        "../scripts/meta_table.py"


rule plot_agreement:
    input:
        per_image=rules.aggregate_records.output.per_image,
    output:
        figures=reported_figure("metric_agreement"),
        csv=f"{RESULTS}/tables/metric_agreement.csv",
    log:
        f"{RESULTS}/logs/plot_agreement.log",
    conda:
        ENV_REPORT
    params:
        # all of them: without the families a meta profile keeps only its two anchors (tau = +-1)
        explainers=EXPLAINERS,
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
        seed=config["seed"],
        models=MODELS,
        plots=config["plots"],
        metrics=META_METRICS,
    script:
        "../scripts/plot_agreement.py"


# The metric report card: every configured evaluator's curves (FUD variants
# included) against every ground-truth family, the anchors' ranks, agreement
# and cost (fudbench.meta.report_card).
rule report_card:
    input:
        per_image=rules.aggregate_records.output.per_image,
        records=rules.aggregate_records.output.records,
        gate=lambda w: gate_input(GATED),  # the family gate, where the run has one (below)
    output:
        tex=f"{RESULTS}/tables/report_card.tex",
        csv=reported_table(f"{RESULTS}/tables/report_card.csv", "report_card"),
    log:
        f"{RESULTS}/logs/report_card.log",
    conda:
        ENV_ANALYSIS
    params:
        explainers=config["explainers"],
        evaluators=config["evaluators"],
        classifiers=config["models"]["classifiers"],
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
        target_half_width=config["analysis"].get("meta_target_half_width", 0.2),
        seed=config["seed"],
    script:
        "../scripts/report_card.py"


rule plot_report_card:
    input:
        csv=rules.report_card.output.csv,
    output:
        figures=reported_figure("report_card"),
    log:
        f"{RESULTS}/logs/plot_report_card.log",
    conda:
        ENV_REPORT
    params:
        plots=config["plots"],
    script:
        "../scripts/plot_report_card.py"


# The headline claims, each decided by a paired bootstrap over images (fudbench.meta.claims).
rule claims:
    input:
        per_image=rules.aggregate_records.output.per_image,
        gate=lambda w: gate_input(GATED),
    output:
        tex=f"{RESULTS}/tables/claims.tex",
        csv=reported_table(f"{RESULTS}/tables/claims.csv", "claims"),
    log:
        f"{RESULTS}/logs/claims.log",
    conda:
        ENV_ANALYSIS
    params:
        explainers=config["explainers"],
        evaluators=config["evaluators"],
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
        seed=config["seed"],
    script:
        "../scripts/claims.py"


# The family gate (fudbench.meta.gate): a family's order counts on a model
# only where its best member beats `random` on the ground-truth masks (mass
# inside), a truth no evaluation under test computes, and the members are in
# the family's order on that truth. Needs the masks of the
# synthetic benchmark and a `random` entry.
RANDOM_ENTRIES = [n for n, m in anchor_explainers(config["explainers"]).items() if m == "random"]
GATED = bool(DEGRADED) and bool(RANDOM_ENTRIES) and config["data"]["source"] == "synthetic"
# every member (the gate also checks the family's order on the truth) and the random map
GATE_EXPLAINERS = sorted(set(DEGRADED) | set(RANDOM_ENTRIES[:1]))


if GATED:

    rule family_gate:
        input:
            attributions=expand(
                f"{RESULTS}/attributions/{{model}}/{{explainer}}/shard{{shard}}.npz",
                model=MODELS,
                explainer=GATE_EXPLAINERS,
                shard=SHARDS,
            ),
            images=rules.make_dataset.output.eval,
        output:
            tex=f"{RESULTS}/tables/family_gate.tex",
            csv=reported_table(f"{RESULTS}/tables/family_gate.csv", "family_gate"),
        log:
            f"{RESULTS}/logs/family_gate.log",
        conda:
            ENV_TORCH
        params:
            degraded={name: list(v) for name, v in DEGRADED.items()},
            random_entry=RANDOM_ENTRIES[0] if RANDOM_ENTRIES else None,
            reduction=config["evaluation"]["reduction"],
            ratios=config["evaluation"]["ratios"],
            ci=config["analysis"]["ci"],
        script:
            "../scripts/family_gate.py"


# The pre-registered endpoint (fudbench.meta.endpoint; docs/meta_evaluation.md):
# FUD symmetric and FUD bottom vs paper FUD on the gated scatter-matched families.
from fudbench.meta.endpoint import scatter_matched

ENDPOINT = (
    GATED
    and bool(config["evaluators"].get("fud", {}) or {})
    and bool((config["evaluators"].get("fud") or {}).get("symmetric"))
    and any(scatter_matched(family) for family, _ in DEGRADED.values())
)


if ENDPOINT:

    rule endpoint:
        input:
            per_image=rules.aggregate_records.output.per_image,
            gate=rules.family_gate.output.csv,
        output:
            tex=f"{RESULTS}/tables/endpoint.tex",
            csv=reported_table(f"{RESULTS}/tables/endpoint.csv", "endpoint"),
        log:
            f"{RESULTS}/logs/endpoint.log",
        conda:
            ENV_ANALYSIS
        params:
            explainers=config["explainers"],
            evaluators=config["evaluators"],
            ci=config["analysis"]["ci"],
        script:
            "../scripts/endpoint.py"
