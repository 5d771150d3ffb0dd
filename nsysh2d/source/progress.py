"""Progress of a long read of a user's file on stderr (the Kineto reader's; any reader can use it)."""
from __future__ import annotations

import os
import sys
import time


def read_progress(path: str):
    """Progress on stderr whenever the read takes more than PROGRESS_AFTER seconds, whatever the file's size (a
    small .json.gz on a slow shared machine too): a percentage updated in place. Only on a terminal: a pipe or a
    CI log keeps its one clear line per problem (an error after a slow read is still one line). A read done sooner
    prints nothing; -q (NSYSH2D_QUIET) none."""
    if os.environ.get("NSYSH2D_QUIET") or not _tty():
        return None
    size = max(os.path.getsize(path), 1)
    t0, shown = time.monotonic(), [None]

    def report(done: int) -> None:
        now, finished = time.monotonic(), done >= size
        if shown[0] == "done" or shown[0] is None and (finished or now - t0 < PROGRESS_AFTER):
            return
        if not finished and shown[0] is not None and now - shown[0] < 0.5:
            return
        shown[0] = "done" if finished else now
        text = f"nsysh2d: reading {os.path.basename(path)}: {min(100, 100 * done // size)}% ({now - t0:.0f} s)"
        sys.stderr.write(f"\r{text}" + ("\n" if finished else ""))
        sys.stderr.flush()

    return report


PROGRESS_AFTER = 2.0   # seconds


def _tty() -> bool:
    return sys.stderr.isatty()
