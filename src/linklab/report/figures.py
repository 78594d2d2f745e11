"""Every figure of the HTML page, in its order (plots.py, plot_throughput.py, plot_bars.py)."""

from __future__ import annotations

from linklab.report.plot_bars import amplification, cpu
from linklab.report.plot_throughput import throughput
from linklab.report.plots import Plot, latency_cdf, payload_sweep, rate_over_time
from linklab.report.run import Run


def all_plots(run: Run) -> list[Plot]:
    """Every figure the run has data for. Cells linklab could not measure (errors) have
    nothing to draw and are left out; throughput searches have their own figure and are
    not in the Table II sweep."""
    rows = [r for r in run.rows if r.get("status") != "error"]
    plots = [latency_cdf(run.measurement_dir, rows), rate_over_time(rows),
             payload_sweep(rows, run.pool), throughput(rows), amplification(rows), cpu(rows)]
    return [p for p in plots if p is not None]
