"""CPU ms per token by thread and kind of work, from a `perf record` of a decode window.

    perf_threads.py PERF_DATA TOKENS_IN_WINDOW

Used by perf_threads.sh. Kinds: the native quantized-matmul kernels and the pool's spinning,
the native fast:: primitives, MLX's attention matmuls (sgemm_), MLX's other work (libmlx:
its ops, scheduling, graph construction), MLX's JIT-compiled swiglu, malloc/free, the kernel
(scheduling), the JVM.
"""
import collections
import re
import subprocess
import sys

HZ = 1999


def kind(sym, dso):
    if dso == "jit":
        return "MLX compiled swiglu (JIT)"
    if sym.startswith("mlxr::qmm::WorkerPool"):
        return "qmm pool: waiting / spinning"
    if sym.startswith("mlxr::qmm::"):
        return "native quantized matmul"
    if sym.startswith("mlxr::fastnum::"):
        return "fast-tier quantized matmul (--numerics fast)"
    if sym.startswith("mlxr::fast::"):
        low = sym.lower()  # the tasks' lambdas carry the primitives' names (NativeSdpa, ...)
        if "sdpa" in low or "weighted_rows" in low or "exp_lanes" in low or "transpose" in low \
                or "scores_few_rows" in low or "softmax" in low:
            return "native attention"
        if "rope" in low or "rotation" in low:
            return "native rope"
        if "rms" in low:
            return "native rms_norm"
        return "native fast ops, shared"
    if "sgemm" in sym:
        return "MLX attention matmuls (sgemm_)"
    if dso.startswith("libmlx"):
        return "MLX other (ops, scheduling, graph)"
    if dso.startswith("libm."):
        return "libm"
    if dso.startswith("libc.") or dso.startswith("libstdc"):
        return "libc (malloc/free, memcpy, locks)"
    if dso == "[kernel.kallsyms]":
        return "kernel (scheduling, syscalls)"
    if "libjvm" in dso or dso.startswith("perf-"):
        return "JVM (interpreter, JIT code, GC)"
    return "other (" + dso + ")"


def main():
    data, tokens = sys.argv[1], float(sys.argv[2])
    out = subprocess.run(["perf", "script", "-i", data, "-F", "tid,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    per = collections.defaultdict(collections.Counter)
    for line in out.splitlines():
        parts = line.strip().split(None, 2)
        if len(parts) < 3:
            continue
        m = re.match(r"(.*)\s+\((.*)\)$", parts[2])
        sym, dso = (m.group(1).strip(), m.group(2)) if m else (parts[2], "")
        dso = "jit" if "/mlx/" in dso and "/cpu/lib" in dso else dso.split("/")[-1]
        per[parts[0]][kind(sym, dso)] += 1
    ms = lambda n: n / HZ / tokens * 1000
    print(f"{tokens:.0f} tokens in the window; CPU ms per token:")
    for tid, kinds in sorted(per.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(kinds.values())
        if ms(total) < 0.5:
            continue
        print(f"thread {tid}: {ms(total):.2f}")
        for k, n in kinds.most_common():
            if ms(n) >= 0.05:
                print(f"    {ms(n):7.2f}  {k}")


if __name__ == "__main__":
    main()
