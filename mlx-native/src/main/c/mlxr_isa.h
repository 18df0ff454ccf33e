// The x86 instruction sets the shim's kernels are compiled for (the exact
// quantized matmul, mlxr_qmm*; the fast numerics tier, mlxr_fastnum*), and
// which one a call runs. Defined in mlxr_isa.cpp, compiled for baseline
// x86-64: the answer decides whether any wider code may run at all.
#pragma once

namespace mlxr {

// Numbered as the Java side's KernelIsa (0 = none: the kernels do not run).
enum class Isa : int { None = 0, Avx2 = 1, Avx512 = 2 };

// Whether this CPU has the set: AVX2 means AVX2 + F16C, AVX-512 means
// F, BW and VL (and AVX2). Always false off x86-64.
bool cpu_has(Isa isa);

// The set the kernels use: the widest this CPU has, unless MLXR_KERNEL_ISA
// (read once, at the first call) names one — `avx2` forces the AVX2 kernels
// on an AVX-512 CPU (A/B runs, the path CPUs without AVX-512 take). A value
// that is unknown, or names a set this CPU lacks, throws
// std::invalid_argument naming the variable, at every call.
Isa default_isa();

// The set an entry point's `isa` argument names: 0 = default_isa(), 1 = AVX2,
// 2 = AVX-512 (tests run each). Another code, or a set this CPU lacks, throws
// std::invalid_argument naming the argument.
Isa isa_of_call(int isa_code);

}  // namespace mlxr
