# Provenance of the run: the machine (CPU model and the flags that decide the
# kernels' speed, or the GPU), torch and CUDA versions, threads, and the
# precision FUD's U-Net resolves to there (amp_dtype / channels_last: auto).
# Written once per run; the params name the parse-time machine, so a run
# continued on a machine with another CPU writes it anew.
from fudbench.core.hardware import cpu_info, onednn_isa_cap

FUD_ENTRY = next(iter(entries_of(config["evaluators"], "fud")), None)


rule run_info:
    output:
        info=f"{RESULTS}/run_info.json",
        table=reported_table(f"{RESULTS}/tables/run_info.csv", "run_info"),
    log:
        f"{RESULTS}/logs/run_info.log",
    conda:
        ENV_TORCH
    threads: 1
    resources:
        gpu=GPU,
        mem_mb=1000,
        runtime=5,
    params:
        machine={**cpu_info(), "onednn_max_cpu_isa": onednn_isa_cap()},
        fud=lambda w: (
            {k: resolved_settings(FUD_ENTRY).get(k) for k in ("amp_dtype", "channels_last")} if FUD_ENTRY else None
        ),
        job=job_params(),
    script:
        "../scripts/run_info.py"
