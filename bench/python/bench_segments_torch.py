"""torch.sum(x.view(rows, length), dim=1) on the GPU, for the shapes of xreduce_bench's `segments`
suite (2^28 f32 as 2^20 rows of 256 and as 2^14 rows of 2^14): the time per call from CUDA events
around 8 back-to-back calls, median of 20. Run in the same device session as the suite; writes
segments-torch.{json,md} beside its results.

    python3 bench/python/bench_segments_torch.py OUT_DIR
"""
import json
import statistics
import sys

import torch


def main(out_dir):
    n = 1 << 28
    x = torch.rand(n, device="cuda", dtype=torch.float32)
    rows = []
    lines = ["# torch.sum(dim=1), device-resident f32\n", f"{torch.cuda.get_device_name()}, torch {torch.__version__}.\n",
             "| rows | length | median us | GB/s |", "|---:|---:|---:|---:|"]
    for length in (256, 1 << 14):
        m = x.view(n // length, length)
        torch.sum(m, dim=1)
        torch.cuda.synchronize()
        samples = []
        for _ in range(20):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(8):
                torch.sum(m, dim=1)
            stop.record()
            stop.synchronize()
            samples.append(start.elapsed_time(stop) / 8 * 1e-3)
        t = statistics.median(samples)
        rows.append({"rows": n // length, "length": length, "median_s": t, "gbps": n * 4 / t / 1e9, "times_s": samples})
        lines.append(f"| {n // length} | {length} | {t * 1e6:.1f} | {n * 4 / t / 1e9:.0f} |")
    with open(f"{out_dir}/segments-torch.json", "w") as f:
        json.dump({"suite": "segments-torch", "torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    with open(f"{out_dir}/segments-torch.md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
