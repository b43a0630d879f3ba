"""torch's statistics on the GPU over the `statistics` suite's device data shape (2^28 f32, uniform
in [0, 1)), next to the suite's device rows (cuda.shuffle): torch.sum, var_mean, var, std, mean,
logsumexp, linalg.vector_norm (ord 1, 2, inf), aminmax, nansum, nanmean and count_nonzero. Each
is timed as the suite times its own: 8 back-to-back calls captured in a CUDA graph, replayed 20
times, median per call. Run in the same device session as the suite, after it; reads
OUT_DIR/statistics.json and writes statistics-gpu-torch.{json,md} beside it: each op's time as a
multiple of the same library's plain sum, and torch's time over xreduce's.

    python3 bench/python/bench_statistics_torch.py OUT_DIR
"""
import json
import statistics
import sys

import torch

CALLS, REPLAYS = 8, 20


def seconds_per_call(call):
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        call()  # warm-up, outside the capture: allocations and kernel selection
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(CALLS):
                call()
        samples = []
        for r in range(REPLAYS + 2):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            graph.replay()
            stop.record(stream)
            stop.synchronize()
            if r >= 2:
                samples.append(start.elapsed_time(stop) * 1e-3 / CALLS)
    return statistics.median(samples), samples


def main(out_dir):
    with open(f"{out_dir}/statistics.json") as f:
        suite = json.load(f)
    device_rows = suite.get("device_rows", [])
    if not device_rows:
        sys.exit("bench_statistics_torch: the suite has no device rows (no GPU in its run)")
    n = next(r["n"] for r in device_rows if "n" in r)
    ours = {r["what"]: r["median_s"] for r in device_rows if "median_s" in r}
    x = torch.rand(n, dtype=torch.float32, device="cuda")
    # (xreduce's row, what torch calls, the call)
    cases = [("sum (cuda.shuffle)", "torch.sum", lambda: torch.sum(x)),
             ("mean", "torch.mean", lambda: torch.mean(x)),
             ("var", "torch.var_mean", lambda: torch.var_mean(x, correction=0)),
             ("var", "torch.var", lambda: torch.var(x, correction=0)),
             ("std", "torch.std", lambda: torch.std(x, correction=0)),
             ("norm1", "torch.linalg.vector_norm(ord=1)", lambda: torch.linalg.vector_norm(x, 1)),
             ("norm2", "torch.linalg.vector_norm(ord=2)", lambda: torch.linalg.vector_norm(x, 2)),
             ("norminf", "torch.linalg.vector_norm(ord=inf)", lambda: torch.linalg.vector_norm(x, float("inf"))),
             ("logsumexp", "torch.logsumexp", lambda: torch.logsumexp(x, 0)),
             ("count_nonzero", "torch.count_nonzero", lambda: torch.count_nonzero(x)),
             ("nansum", "torch.nansum", lambda: torch.nansum(x)),
             ("nanmean", "torch.nanmean", lambda: torch.nanmean(x)),
             (None, "torch.aminmax", lambda: torch.aminmax(x))]
    torch_sum = seconds_per_call(cases[0][2])[0]
    ours_sum = ours["sum (cuda.shuffle)"]
    rows = []
    md = (f"# Statistics on the GPU: xreduce (cuda.shuffle) and torch\n\n{torch.cuda.get_device_name()}, 2^{n.bit_length() - 1} f32 "
          f"in device memory, torch {torch.__version__}; xreduce's times from `xreduce_bench statistics` in the same session "
          f"(statistics.md), torch's measured as the suite measures (CUDA graphs of {CALLS} calls, median of {REPLAYS} replays). "
          "Each library's time is also given over its own plain sum in its own run; the last column is torch's time over "
          "xreduce's (above 1: xreduce is faster).\n\n"
          "| op | xreduce us | / xreduce sum | torch | torch us | / torch sum | torch / xreduce |\n"
          "|---|---:|---:|---|---:|---:|---:|\n")
    for what, name, call in cases:
        t, samples = seconds_per_call(call)
        mine = ours.get(what) if what else None
        rows.append({"op": what, "torch": name, "torch_s": t, "torch_samples_s": samples, "torch_over_sum": t / torch_sum,
                     "xreduce_s": mine, "xreduce_over_sum": mine / ours_sum if mine else None,
                     "torch_over_xreduce": t / mine if mine else None})
        md += (f"| {what or '-'} | {mine * 1e6:.1f} | {mine / ours_sum:.2f} | " if mine else "| - | - | - | ") + \
              f"{name} | {t * 1e6:.1f} | {t / torch_sum:.2f} | " + (f"{t / mine:.2f} |\n" if mine else "- |\n")
    out = {"suite": "statistics-gpu-torch", "device": torch.cuda.get_device_name(), "torch": torch.__version__, "n": n,
           "commit": suite.get("commit"), "date": suite.get("date"), "rows": rows}
    with open(f"{out_dir}/statistics-gpu-torch.json", "w") as f:
        json.dump(out, f, indent=1)
    with open(f"{out_dir}/statistics-gpu-torch.md", "w") as f:
        f.write(md + f"\n_Measured {suite.get('date')} at commit {suite.get('commit')}._\n")
    print(md)


if __name__ == "__main__":
    main(sys.argv[1])
