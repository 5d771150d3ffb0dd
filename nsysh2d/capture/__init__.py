"""Capture: running a workload under nsys (nsys.py, workload.py: its variants) or torch.profiler (torch_profile.py),
what runs beside it while it is profiled (site_hook.py, copy_class.py), and nsys's recipe runner (recipe_runner.py).
Nothing here imports duckdb, polars or rich: a bare GPU box with torch and click can profile."""
