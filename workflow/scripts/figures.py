"""Rule figures: the 5D radar and the metric heatmap, each with a provenance footer."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    import pandas as pd

    from thinkprobe import __version__
    from thinkprobe.report_figures import metric_heatmap, radar
    from thinkprobe.outputs import sha256_file

    source = snakemake.input[0]
    footer = (f"thinkprobe {__version__} | code {snakemake.params.code[:12]} | "
              f"{source} sha256 {sha256_file(source)[:16]}")
    profiles = pd.read_parquet(source)
    radar(profiles, snakemake.output.radar, footer)
    metric_heatmap(profiles, snakemake.output.heatmap, footer)
    print("figures written", file=log)
