"""The N-D targets' shapes of xreduce_bench's `views` suite, for the scripts that time other
libraries beside it (bench_views_torch.py on the GPU, bench_views_cpu.py on the host): each
(name, shape of the C-order array, axes, whether its transpose is reduced), at 2^log2n elements.
The names are the suite's, which the scripts match rows by."""


def shapes(log2n):
    n, side, batch = 1 << log2n, 1 << (log2n // 2), (1 << log2n) >> 18
    return [
        (f"({side}, {side}), axis 0", (side, side), (0,), False),
        (f"({side}, {side}), axis 1", (side, side), (1,), False),
        (f"({n // 256}, 256), axis 1", (n // 256, 256), (1,), False),
        (f"({n // 256}, 256), axis 0", (n // 256, 256), (0,), False),
        (f"({batch}, 256, 1024), axis 1", (batch, 256, 1024), (1,), False),
        (f"({batch}, 256, 1024), axes (0, 2)", (batch, 256, 1024), (0, 2), False),
        (f"transposed ({side}, {side}), axis 1", (side, side), (1,), True),
    ]
