"""Synthetic multi-rank exports made from a real single-GPU one (issue 41): the export's process is copied as
`ranks` processes, rank r with its pid + r (globalPid/globalTid + r << 24), its GPU work on device r, and every
timestamp shifted by r * shift_ns, as tensor-parallel ranks that started a little apart. Only the labels and
times are made up; every row is a real one. Said to be synthetic wherever it is used."""
import shutil
import sqlite3

PID_STEP = 1 << 24   # nsys serializes a globalPid/globalTid with the pid from bit 24 up


def make_ranks(source, path, ranks: int = 2, shift_ns: int = 1_300_000):
    shutil.copy(source, path)
    con = sqlite3.connect(path)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    pids = [r[0] for r in con.execute("SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL")]
    assert len(pids) == 1, "one traced process expected"
    pid = pids[0]
    for t in tables:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({t})")]
        pk = [r[1] for r in con.execute(f"PRAGMA table_info({t})") if r[5]]
        keys = [c for c in ("globalPid", "globalTid") if c in cols]
        if not keys or t in ("PROCESSES",):
            continue
        # the traced process's rows only (globalTid of its threads share its pid bits)
        own = "globalPid = ?" if "globalPid" in cols else "globalTid / ? * ? = ?"
        args = (pid,) if "globalPid" in cols else (PID_STEP, PID_STEP, pid)
        keep = [c for c in cols if c not in pk]
        for r in range(1, ranks):
            def expr(c):
                if c in ("globalPid", "globalTid"):
                    return f"{c} + {r * PID_STEP}"
                if c in ("start", "end", "timestamp"):
                    return f"{c} + {r * shift_ns}"
                if c == "deviceId":
                    return f"{c} + {r}"
                return c
            sel = ", ".join(expr(c) for c in keep)
            con.execute(f"INSERT INTO {t} ({', '.join(keep)}) SELECT {sel} FROM {t} WHERE {own}", args)
    for r in range(1, ranks):
        con.execute("INSERT INTO PROCESSES (globalPid, pid, name) SELECT globalPid + ?, pid + ?, name FROM PROCESSES "
                    "WHERE globalPid = ?", (r * PID_STEP, r, pid))
    con.commit()
    con.close()
    return path
