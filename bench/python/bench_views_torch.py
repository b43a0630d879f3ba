"""torch.sum(dim=...) and cupy.sum(axis=...) on the GPU, for the shapes of xreduce_bench's `views`
suite (2^28 f32 device-resident: a square over axis 0 and 1, (2^20, 256) over axis 1 and 0,
(1024, 256, 1024) over axis 1 and over axes (0, 2), a transposed square over axis 1), and the flat
sum of the same bytes: the time per call from CUDA events around 8 back-to-back calls, median of
20. CuPy reads torch's tensor through DLPack (the same memory); it is left out where it is not
installed. Run in the same device session as the suite; writes views-torch.{json,md} beside its
results, and, where the suite's views.json is there, the three side by side in views-compared.md.

    python3 bench/python/bench_views_torch.py OUT_DIR [LOG2N]
"""
import json
import os
import statistics
import sys

import torch

from views_shapes import shapes

try:
    import cupy
except ImportError:  # the comparison then has torch's column only
    cupy = None


def median_time(call, sync, event):
    call()
    sync()
    samples = []
    for _ in range(20):
        start, stop = event(), event()
        start.record()
        for _ in range(8):
            call()
        stop.record()
        stop.synchronize()
        samples.append(elapsed_ms(start, stop) / 8 * 1e-3)
    return statistics.median(samples), samples


def elapsed_ms(start, stop):
    return start.elapsed_time(stop) if hasattr(start, "elapsed_time") else cupy.cuda.get_elapsed_time(start, stop)


def main(out_dir, log2n=28):
    n = 1 << log2n
    x = torch.rand(n, device="cuda", dtype=torch.float32)
    torch_event = lambda: torch.cuda.Event(enable_timing=True)
    flat_t, _ = median_time(lambda: torch.sum(x), torch.cuda.synchronize, torch_event)
    cx = cupy.from_dlpack(x) if cupy is not None else None
    cupy_event = (lambda: cupy.cuda.Event()) if cupy is not None else None
    rows = []
    for name, shape, axes, transposed in shapes(log2n):
        t = x.view(shape)
        if transposed:
            t = t.T
        torch_t, torch_samples = median_time(lambda: torch.sum(t, dim=axes), torch.cuda.synchronize, torch_event)
        row = {"array": name, "torch_s": torch_t, "torch_times_s": torch_samples, "torch_fraction_of_flat_sum": flat_t / torch_t}
        if cx is not None:
            c = cx.reshape(shape)
            if transposed:
                c = c.T
            cupy_t, cupy_samples = median_time(lambda: cupy.sum(c, axis=axes), cupy.cuda.Device().synchronize, cupy_event)
            row.update({"cupy_s": cupy_t, "cupy_times_s": cupy_samples, "cupy_fraction_of_flat_sum": flat_t / cupy_t})
        rows.append(row)
    versions = f"torch {torch.__version__}" + (f", CuPy {cupy.__version__}" if cupy is not None else ", no CuPy")
    lines = ["# torch.sum(dim=...) and cupy.sum(axis=...), device-resident f32\n",
             f"{torch.cuda.get_device_name()}, {versions}. torch's flat sum of the same bytes: {flat_t * 1e6:.1f} us.\n",
             "| array, axes | torch us | % of flat sum | CuPy us | % of flat sum |", "|---|---:|---:|---:|---:|"]
    for r in rows:
        cupy_cells = f"{r['cupy_s'] * 1e6:.1f} | {100 * r['cupy_fraction_of_flat_sum']:.1f}%" if "cupy_s" in r else "not run | "
        lines.append(f"| {r['array']} | {r['torch_s'] * 1e6:.1f} | {100 * r['torch_fraction_of_flat_sum']:.1f}% | {cupy_cells} |")
    with open(os.path.join(out_dir, "views-torch.json"), "w") as f:
        json.dump({"suite": "views-torch", "device": torch.cuda.get_device_name(), "versions": versions, "n": n,
                   "flat_sum_s": flat_t, "rows": rows}, f, indent=1)
    with open(os.path.join(out_dir, "views-torch.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    compare(out_dir, rows)


def compare(out_dir, rows):
    """xreduce's kernel for each shape (the faster column kernel where there are two) beside torch's and CuPy's."""
    path = os.path.join(out_dir, "views.json")
    if not os.path.exists(path):
        return
    with open(path) as f:
        device_rows = json.load(f).get("device_rows", [])
    probe = next((r for r in device_rows if r.get("kernel") == "read probe"), None)
    if probe is None:
        return
    lines = ["# Axis reductions: xreduce (cuda.shuffle), torch and CuPy, same device session\n",
             f"f32, device-resident, 2^{int(probe['n']).bit_length() - 1} elements. Read probe {probe['median_s'] * 1e6:.1f} us "
             f"({probe['gbps']:.0f} GB/s). xreduce: the faster kernel where columns have two (views-device.md has both). "
             "Ratios are times over xreduce's: above 1, xreduce is faster.\n",
             "| array, axes | xreduce kernel | xreduce us | % of probe | torch / xreduce | CuPy / xreduce |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        mine = [d for d in device_rows if d.get("array") == r["array"] and d.get("kernel") != "sweep"]
        if not mine:
            continue
        best = min(mine, key=lambda d: d["median_s"])
        cupy_cell = f"{r['cupy_s'] / best['median_s']:.2f}" if "cupy_s" in r else "not run"
        lines.append(f"| {r['array']} | {best['kernel']} | {best['median_s'] * 1e6:.1f} | {100 * best['fraction_of_probe']:.1f}% | "
                     f"{r['torch_s'] / best['median_s']:.2f} | {cupy_cell} |")
    with open(os.path.join(out_dir, "views-compared.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 28)
