#!/usr/bin/env python3
"""Tables, plot and a scale model from xreduce_bench_mpi's runs:
summarize.py RUNS.jsonl OUT_PREFIX [MACHINE]   (MACHINE: how to name the host; default: this one's CPU)

Writes OUT.json (every run), OUT.md and OUT.png. The model: a reduction of 2^40 f32 over 1024
ranks, from the measured costs: each rank's local sum of 2^30 elements (the 1-rank run with the
most threads, or the largest run measured), then log2(1024) = 10 combine steps, each costing what
one step cost here (the combine's latency at the most ranks measured, over its log2(ranks) steps)
plus a network's latency per step, which a single host cannot measure (stated, not measured).
"""
import datetime
import json
import math
import platform
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def latency_of(run, prefix):
    return next(r["us"] for r in run["latency"] if r["what"].startswith(prefix))


def markdown(runs):
    lines = ["# xreduce::mpi against bare MPI_Allreduce", "",
             "One host; each row one `mpirun`. Latency: median per call of barrier-started batches of 1,000. "
             "At 1 rank MPI has nothing to send, so that row's ratio measures nothing.", "",
             "## Latency, microseconds", "",
             "| ranks | MPI_Allreduce 8 B | MPI_Allreduce 608 B | xreduce f64 sum (40 B) | exact (608 B) | f32 argmax (56 B) | reduce to rank 0 (264 B) | "
             "local call alone | what the combine adds (sum - local) / bare 8 B |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    seen = set()
    for run in sorted(runs, key=lambda r: r["ranks"]):
        if run["ranks"] in seen:
            continue
        seen.add(run["ranks"])
        bare = latency_of(run, "MPI_Allreduce, one double")
        ours = latency_of(run, "xreduce::mpi::allreduce, f64 sum,")
        cells = [bare, latency_of(run, "MPI_Allreduce, 76"), ours, latency_of(run, "xreduce::mpi::allreduce, f64 sum exact"),
                 latency_of(run, "xreduce::mpi::allreduce, f32 argmax"), latency_of(run, "xreduce::mpi::reduce"),
                 latency_of(run, "local reduce alone")]
        added = ours - latency_of(run, "local reduce alone")
        lines.append(f"| {run['ranks']} | " + " | ".join(f"{c:.2f}" for c in cells) + f" | {added / bare:.2f}x |")
    lines += ["", "## One f32 sum over the ranks", "",
              "| ranks x threads | N | backend (rank 0) | ms | GB/s | local part alone, ms | against 1 rank x the same threads in all |",
              "|---|---:|---|---:|---:|---:|---:|"]
    for run in sorted(runs, key=lambda r: (r["ranks"] * r["threads"], r["ranks"])):
        s = run["sum"]
        peer = [r for r in runs if r["ranks"] == 1 and r["threads"] == run["ranks"] * run["threads"] and r["sum"]["log2n"] == s["log2n"]]
        ratio = f"{peer[0]['sum']['seconds'] / s['seconds']:.2f}x" if peer and run["ranks"] > 1 else ""
        lines.append(f"| {run['ranks']} x {run['threads']} | 2^{s['log2n']} | {s['backend']} | {s['seconds'] * 1e3:.2f} | "
                     f"{s['gbps']:.1f} | {s['local_seconds'] * 1e3:.2f} | {ratio} |")
    lines += ["", model(runs), ""]
    return "\n".join(lines)


def model(runs):
    widest = max(runs, key=lambda r: (r["ranks"], -r["ranks"]))
    step_us = latency_of(widest, "xreduce::mpi::allreduce, f64 sum exact") / max(1, math.log2(widest["ranks"]))
    base = max(runs, key=lambda r: (r["ranks"] == 1, r["threads"], r["sum"]["log2n"]))
    s = base["sum"]
    local_s = s["local_seconds"] * (2 ** 30) / (2 ** s["log2n"])
    network_us = 5.0
    steps = 10
    total_combine_us = steps * (step_us + network_us)
    return "\n".join([
        "## Scale on paper: 2^40 f32 over 1024 ranks",
        "",
        f"- Local: 2^30 elements a rank, at this host's measured {s['gbps'] if base['ranks'] == 1 else 4 * 2**s['log2n'] / s['local_seconds'] / 1e9:.1f} GB/s "
        f"({base['ranks']} rank x {base['threads']} threads, 2^{s['log2n']}): {local_s * 1e3:.1f} ms.",
        f"- Combine: log2(1024) = {steps} steps. One step cost {step_us:.2f} us here (the exact f64 sum's combine at "
        f"{widest['ranks']} ranks over its {max(1, math.log2(widest['ranks'])):.0f} steps: the largest partial, 608 bytes); a network adds its "
        f"latency to each, taken as {network_us:.0f} us (not measured here): {total_combine_us:.0f} us in all.",
        f"- Total: {local_s * 1e3 + total_combine_us / 1e3:.1f} ms, of which the combine is {100 * total_combine_us / 1e3 / (local_s * 1e3 + total_combine_us / 1e3):.2f}%. "
        "The partials are a few hundred bytes whatever N is, so the combine's cost grows with log2(ranks), never with N; "
        "accuracy = exact costs the same bytes as a plain sum.",
    ])


def plot(runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ranks = sorted({r["ranks"] for r in runs})
    for prefix, label in (("MPI_Allreduce, one double", "bare MPI_Allreduce, 8 B"), ("MPI_Allreduce, 76", "bare MPI_Allreduce, 608 B"),
                          ("xreduce::mpi::allreduce, f64 sum,", "xreduce f64 sum"),
                          ("xreduce::mpi::allreduce, f64 sum exact", "xreduce f64 sum, exact"),
                          ("xreduce::mpi::allreduce, f32 argmax", "xreduce f32 argmax")):
        ys = [latency_of(next(r for r in runs if r["ranks"] == p), prefix) for p in ranks]
        ax.plot(ranks, ys, marker="o", label=label)
    ax.set_xlabel("ranks")
    ax.set_ylabel("microseconds per call")
    ax.set_xticks(ranks)
    ax.legend(fontsize=8)
    ax.set_title(f"xreduce::mpi combine latency ({datetime.date.today().isoformat()}, {runs[0]['commit']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def main():
    runs = load(sys.argv[1])
    out = sys.argv[2]
    machine = sys.argv[3] if len(sys.argv) > 3 else f"{cpu_model()}, {runs[0]['hardware_threads']} hardware threads"
    data = {"suite": "mpi", "date": datetime.date.today().isoformat(), "commit": runs[0]["commit"],
            "machine": {"description": machine, "threads": runs[0]["hardware_threads"]}, "runs": runs}
    with open(out + ".json", "w") as f:
        json.dump(data, f, indent=1)
    text = markdown(runs) + f"\n_Measured {data['date']} at commit {data['commit']} on {machine}; one host._\n"
    with open(out + ".md", "w") as f:
        f.write(text)
    plot(runs, out + ".png")
    print(text)


if __name__ == "__main__":
    main()
