"""What torch takes for the `stats` suite's one pass (sum, min, max and argmax of 2^28 f32 on the
GPU): torch.sum alone, and torch.sum, torch.aminmax and torch.argmax one after another (torch has
no single call for the four). Time per call from CUDA events around 8 back-to-back calls, median
of 20. Run in the same device session as the suite; writes stats-torch.{json,md} beside its
results.

    python3 bench/python/bench_stats_torch.py OUT_DIR
"""
import json
import statistics
import sys

import torch


def seconds_per_call(call):
    call()
    torch.cuda.synchronize()
    samples = []
    for _ in range(20):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(8):
            call()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) / 8 * 1e-3)
    return statistics.median(samples), samples


def main(out_dir):
    n = 1 << 28
    x = torch.rand(n, device="cuda", dtype=torch.float32)
    cases = [("torch.sum", lambda: torch.sum(x)),
             ("torch.sum, torch.aminmax, torch.argmax", lambda: (torch.sum(x), torch.aminmax(x), torch.argmax(x)))]
    rows = []
    lines = ["# torch: a sum, and sum + min + max + argmax, device-resident f32\n",
             f"{torch.cuda.get_device_name()}, torch {torch.__version__}, 2^28 elements.\n",
             "| what | median us | GB/s of one read | time / torch.sum |", "|---|---:|---:|---:|"]
    base = None
    for name, call in cases:
        t, samples = seconds_per_call(call)
        base = base or t
        rows.append({"what": name, "n": n, "median_s": t, "over_sum": t / base, "times_s": samples})
        lines.append(f"| {name} | {t * 1e6:.1f} | {n * 4 / t / 1e9:.0f} | {t / base:.2f} |")
    with open(f"{out_dir}/stats-torch.json", "w") as f:
        json.dump({"suite": "stats-torch", "torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    with open(f"{out_dir}/stats-torch.md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
