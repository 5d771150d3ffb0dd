"""`torch.cuda._sleep` spins for a number of GPU clock cycles: how many make a microsecond on this card, measured
once with CUDA events (the probes queue GPU work of a known length with it)."""


def sleep_cycles_per_us(torch) -> float:
    torch.cuda._sleep(1_000_000)   # warm-up: the first launch pays module loading
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(20_000_000)
    end.record()
    torch.cuda.synchronize()
    return 20_000_000 / (start.elapsed_time(end) * 1000)
