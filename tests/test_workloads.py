"""The workloads' host-side logic (runs on the CPU in CI) and a CPU smoke run of the model runner."""
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "workloads"))
import h2d_sweep  # noqa: E402
import qwen3vl_inputs as qi  # noqa: E402


def test_grid_and_payload_of_one_image():
    g = qi.grid_for(1024, 1024)
    assert (g.t, g.h, g.w, g.tokens) == (1, 64, 64, 1024)
    ids = qi.vision_pos_ids([g])
    assert ids.shape == (4096, 2) and ids.dtype == np.int64
    assert ids.nbytes == 64 * 1024  # the vLLM vision pos-ids payload for one 1024x1024 image
    video = qi.grid_for(1024, 1024, frames=256)
    assert video.t == 128 and qi.vision_pos_ids([video]).nbytes == 8 * 1024 * 1024
    with pytest.raises(ValueError):
        qi.grid_for(1000, 1024)


def test_pos_ids_follow_the_spatial_merge_order():
    ids = qi.vision_pos_ids([qi.Grid(1, 4, 4)])
    # The first merged token covers patches (0,0) (0,1) (1,0) (1,1).
    assert ids[:4].tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert sorted(map(tuple, ids.tolist())) == [(r, c) for r in range(4) for c in range(4)]
    two = qi.vision_pos_ids([qi.Grid(2, 4, 4), qi.Grid(1, 2, 2)])
    assert two.shape == (36, 2) and (two[:16] == two[16:32]).all()


def test_cu_seqlens():
    cu = qi.cu_seqlens([qi.Grid(2, 4, 4), qi.Grid(1, 2, 6)])
    assert cu.tolist() == [0, 16, 32, 44] and cu.dtype == np.int32


def test_mrope_positions():
    g = qi.Grid(2, 4, 4)  # merged grid 2 x 2 x 2 = 8 tokens
    pos = qi.mrope_positions(3, g, 2)
    assert pos.shape == (3, 3 + 8 + 2)
    assert pos[:, :3].tolist() == [[0, 1, 2]] * 3
    t, h, w = pos[:, 3:11]
    assert t.tolist() == [3, 3, 3, 3, 4, 4, 4, 4]
    assert h.tolist() == [3, 3, 4, 4, 3, 3, 4, 4]
    assert w.tolist() == [3, 4, 3, 4, 3, 4, 3, 4]
    assert pos[:, 11:].tolist() == [[5, 6]] * 3  # text resumes after max(t, h, w) of the image
    assert qi.next_position(pos) == 7


def test_mrope_buffer_variants_copy_the_same_values():
    torch = pytest.importorskip("torch")
    buf = qi.MRopeBuffer(16, "cpu", pin=False)
    assert not buf.cpu[:, :5].is_contiguous() and buf.cpu[0, :5].is_contiguous()
    pos = qi.mrope_positions(2, qi.Grid(1, 4, 4), 1)
    buf.write(0, pos)
    before = buf.copy_to_device(pos.shape[1], "before").clone()
    buf.gpu.zero_()
    after = buf.copy_to_device(pos.shape[1], "after")
    assert torch.equal(before, after) and before.tolist() == pos.tolist()
    with pytest.raises(ValueError):
        buf.write(10, pos)


def test_vision_inputs_variants_agree():
    torch = pytest.importorskip("torch")
    g = [qi.Grid(1, 4, 4)]
    a = qi.vision_inputs_to_device(qi.vision_pos_ids(g), qi.cu_seqlens(g), "cpu", "before")
    b = qi.vision_inputs_to_device(qi.vision_pos_ids(g), qi.cu_seqlens(g), "cpu", "after")
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    pid, cu = qi.vision_pos_ids(g), qi.cu_seqlens(g)
    rings = (qi.UvaRing(pid.shape, torch.int64, False, view=False), qi.UvaRing(cu.shape, torch.int32, False, view=False))
    c = qi.vision_inputs_to_device(pid, cu, "cpu", "staged", rings=rings)
    assert all(torch.equal(x, y) for x, y in zip(a, c))
    # the staged copy owns its memory: rewriting the slot later does not change what was handed over
    rings[0].host[rings[0].i].fill_(-1)
    assert torch.equal(c[0], a[0])


def test_sweep_range_names_round_trip_and_plan():
    name = h2d_sweep.range_name("pinned_strided", 3 << 20, 10000, 4, 2, 1)
    assert h2d_sweep.parse_range_name(name) == {"variant": "pinned_strided", "bytes": 3 << 20, "backlog_us": 10000,
                                                "inflight": 4, "idx": 2, "rep": 1}
    assert h2d_sweep.parse_range_name("step 3") is None
    plan = h2d_sweep.plan([1024, 2048], ["pageable"], [0, 2000, 10000], [1, 2, 4], 10000, 3)
    assert len(plan) == 2 * 5 * 3  # 3 depths x 1 in flight + 2 more in-flight counts at the default depth
    assert h2d_sweep.parse_size("1.5MiB") == 1572864 and h2d_sweep.parse_size("64KiB") == 65536
    sizes = h2d_sweep.DEFAULT_SIZES
    assert sizes[0] == 64 * 1024 and sizes[-1] == 64 * 1024 * 1024
    assert sum(256 * 1024 <= s <= 8 * 1024 * 1024 for s in sizes) >= 10  # dense where the threshold lies


def test_qwen3vl_cpu_smoke_variants_identical():
    pytest.importorskip("torch")
    args = ["--device", "cpu", "--check-identical", "--repeats", "2", "--steps", "5", "--max-num-tokens", "512", "--decode-batch", "4",
            "--kv-len", "16", "--new-request-every", "3", "--image-size", "128", "--video-frames", "4",
            "--images-per-request", "2", "--prompt-text", "16", "--vision-depth", "1", "--vision-hidden", "64",
            "--vision-heads", "4", "--text-layers", "1", "--text-hidden", "128", "--text-heads", "4",
            "--text-kv-heads", "2", "--text-intermediate", "256", "--vocab", "1000"]
    r = subprocess.run([sys.executable, str(ROOT / "workloads" / "qwen3vl.py"), *args], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert ("identical outputs over 8 runs (before,after,uva,staged x 2; checked on cpu with torch.equal): True"
            in r.stdout)
    assert "[before] site mrope_copy: calls=5" in r.stdout and "[after] site vision_pos_ids: calls=2" in r.stdout
    assert r.stdout.count("[uva] site mrope_copy: calls=5") == 2
    assert r.stdout.count("[staged] site vision_pos_ids: calls=2") == 2
    digests = {line.split("] ", 1)[1] for line in r.stdout.splitlines() if "output digest" in line}
    assert len(digests) == 1


def test_tp_pair_ranks_all_reduce_to_the_unsharded_result(tmp_path):
    """workloads/tp_pair.py on the CPU (gloo): two rank processes, each with its own pid and host timers, end every
    step with the same hidden state, equal to the same layers computed here in one process from the ranks' seeded
    weight shards; the fix changes no value (before and after agree)."""
    torch = pytest.importorskip("torch")
    import json

    args = ["--world", "2", "--steps", "2", "--warmup", "1", "--hidden", "64", "--tokens", "300", "--image", "256",
            "--layers", "3", "--device", "cpu"]
    got = {}
    for v in ("before", "after"):
        r = subprocess.run([sys.executable, str(ROOT / "workloads" / "tp_pair.py"), "--variant", v, *args,
                            "--json-dir", str(tmp_path)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        got[v] = [json.loads((tmp_path / f"tp-{v}-rank{k}.json").read_text()) for k in (0, 1)]
        assert [g["rank"] for g in got[v]] == [0, 1] and got[v][0]["pid"] != got[v][1]["pid"]
        assert all(len(g["mrope_us"]) == len(g["vision_us"]) == 2 for g in got[v])
    # the unsharded reference: rank r's generator seeds its shards, in the order the workload draws them
    hidden, shard, layers, tokens = 64, 32, 3, 300
    w = []
    for rank in (0, 1):
        g = torch.Generator().manual_seed(rank)
        w1 = [torch.randn(hidden, shard, generator=g) / hidden ** 0.5 for _ in range(layers)]
        w2 = [torch.randn(shard, hidden, generator=g) / shard ** 0.5 for _ in range(layers)]
        w.append((w1, w2))
    grid = qi.grid_for(256, 256)
    text = tokens - grid.tokens
    pos = torch.from_numpy(qi.mrope_positions(text // 2, grid, text - text // 2))
    ids, seqlens = qi.vision_pos_ids([grid]), qi.cu_seqlens([grid])
    x = (torch.randn(tokens, hidden, generator=torch.Generator().manual_seed(7)) + pos[0, :, None].float() * 1e-3
         + float(ids[0, 0]) * 1e-6 + float(seqlens[-1]) * 1e-9)
    for layer in range(layers):
        x = sum(x + torch.nn.functional.gelu(x @ w[r][0][layer]) @ w[r][1][layer] for r in (0, 1)) / 2
    want = float(x.double().sum())
    sums = [g["checksum"] for v in got for g in got[v]]
    assert max(abs(s - want) for s in sums) <= 1e-4 * max(1.0, abs(want)), (sums, want)


def test_tp_pair_copies_more_inputs_than_it_runs_through_the_layers(tmp_path):
    """--input-tokens sets the copied inputs (M-RoPE positions, the image) apart from the layers' tokens: the
    copies can pass the pageable staging size without a huge MLP. Fewer inputs than tokens is refused."""
    pytest.importorskip("torch")
    base = [sys.executable, str(ROOT / "workloads" / "tp_pair.py"), "--variant", "before", "--world", "1", "--steps",
            "1", "--warmup", "0", "--hidden", "32", "--tokens", "300", "--image", "256", "--layers", "1",
            "--device", "cpu", "--json-dir", str(tmp_path)]
    r = subprocess.run(base + ["--input-tokens", "5000"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "checksum=" in r.stdout, r.stderr
    r = subprocess.run(base + ["--input-tokens", "200"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "not be below --tokens" in r.stderr, r.stderr
