"""What torch takes for the `dtypes` suite's device rows: torch.sum of 2^30 device-resident
elements of each type (the same kinds of data as the suite), with a read of the same bytes
(torch's own copy of the tensor, counted as one read) for scale. Time per call from CUDA events
around 4 back-to-back calls, median of 10. Run in the same device session as the suite; writes
dtypes-torch.{json,md} beside its results.

    python3 bench/python/bench_dtypes_torch.py OUT_DIR [LOG2N]
"""
import json
import statistics
import sys

import torch


def seconds_per_call(call, calls=4, samples=10):
    call()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            call()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / calls * 1e-3)
    return statistics.median(times), times


def tensor_of(name, n, gen):
    """The suite's data: floats in [0, 1) (f32 uniform, the 16-bit ones from it), random bytes and
    halves, bools 0/1."""
    if name in ("f32", "bf16", "f16"):
        x = torch.rand(n, device="cuda", dtype=torch.float32, generator=gen)
        return x.to({"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[name])
    if name == "bool":
        return torch.randint(0, 2, (n,), device="cuda", dtype=torch.uint8, generator=gen).bool()
    dtype = {"u8": torch.uint8, "i8": torch.int8, "i16": torch.int16, "u16": torch.uint16}[name]
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max + 1, (n,), device="cuda", dtype=torch.int32 if name != "u16" else torch.int64,
                         generator=gen).to(dtype)


def main(out_dir, log2n=30):
    n = 1 << log2n
    gen = torch.Generator(device="cuda").manual_seed(7)
    rows = []
    lines = [f"# torch.sum of 2^{log2n} device-resident elements of each type\n",
             f"{torch.cuda.get_device_name()}, torch {torch.__version__}. GB/s of the bytes read; `copy` is a "
             "device-to-device clone of the same tensor (bytes read, not read + written), for scale.\n",
             "| type | bytes | torch.sum us | torch.sum GB/s | copy GB/s | result dtype |", "|---|---:|---:|---:|---:|---|"]
    for name in ("f32", "bf16", "f16", "u8", "i8", "bool", "i16", "u16"):
        try:
            x = tensor_of(name, n, gen)
            t, samples = seconds_per_call(lambda: torch.sum(x))
            result_dtype = str(torch.sum(x).dtype).replace("torch.", "")
        except (RuntimeError, NotImplementedError) as e:  # a type torch does not sum on the GPU
            lines.append(f"| {name} | | | | | torch refuses: {str(e).splitlines()[0][:80]} |")
            rows.append({"dtype": name, "refused": str(e).splitlines()[0]})
            continue
        nbytes = x.numel() * x.element_size()
        c, _ = seconds_per_call(lambda: x.clone())
        rows.append({"dtype": name, "n": n, "bytes": nbytes, "median_s": t, "gbps": nbytes / t / 1e9, "copy_gbps": nbytes / c / 1e9,
                     "result_dtype": result_dtype, "times_s": samples})
        lines.append(f"| {name} | {nbytes} | {t * 1e6:.1f} | {nbytes / t / 1e9:.0f} | {nbytes / c / 1e9:.0f} | {result_dtype} |")
        del x
        torch.cuda.empty_cache()
    with open(f"{out_dir}/dtypes-torch.json", "w") as f:
        json.dump({"suite": "dtypes-torch", "torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    with open(f"{out_dir}/dtypes-torch.md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
