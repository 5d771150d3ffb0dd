"""Analyses: one module each (h2d_blocking, compare, gate, threshold), each returning a typed result with
to_json()/from_json(). The JSON contract, the cache payload and the baseline are made from those."""
