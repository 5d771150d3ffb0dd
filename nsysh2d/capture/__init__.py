"""Capture: what runs beside the user's workload while it is profiled (torch only: no duckdb, polars or rich)."""
