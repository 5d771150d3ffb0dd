#!/usr/bin/env python3
"""Scrub a Kineto trace before committing it: the host name and the temporary file name torch records.
usage: scrub-kineto.py IN OUT (gzip in and out when the names end in .gz)"""
import gzip
import json
import os
import sys

src, dst = sys.argv[1:3]
opener = gzip.open if src.endswith(".gz") else open
with opener(src, "rt") as f:
    doc = json.load(f)
doc["host_name"] = "scrubbed"
doc["traceName"] = os.path.basename(dst)
out = gzip.open(dst, "wt", compresslevel=9) if dst.endswith(".gz") else open(dst, "w")
with out:
    json.dump(doc, out, separators=(",", ":"))
