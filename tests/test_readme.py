"""The README's first command prints exactly the output the README shows."""
import re

from conftest import ROOT, run_cli


def test_readme_sample_is_the_real_output():
    readme = (ROOT / "README.md").read_text()
    cmd = re.search(r"pip install \. && (nsysh2d analyze \S+)", readme).group(1).split()
    shown = re.search(r"```\n(tests/data/h200/qwen3vl-before\.sqlite  \(.*?)```", readme, re.S).group(1)
    r = run_cli(*cmd[1:], "--no-cache", cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout + r.stderr == shown
