// See mlxr_isa.h.

#include "mlxr_isa.h"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

namespace mlxr {

bool cpu_has(Isa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  }();
  static const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl");
  switch (isa) {
    case Isa::Avx2: return avx2;
    case Isa::Avx512: return avx512;
    default: return false;
  }
#else
  (void)isa;
  return false;
#endif
}

Isa default_isa() {
  static const std::pair<Isa, std::string> chosen = []() -> std::pair<Isa, std::string> {
    Isa widest = cpu_has(Isa::Avx512) ? Isa::Avx512 : cpu_has(Isa::Avx2) ? Isa::Avx2 : Isa::None;
    const char* env = std::getenv("MLXR_KERNEL_ISA");
    if (env == nullptr || *env == '\0') return {widest, ""};
    std::string want(env);
    Isa isa = want == "avx2" ? Isa::Avx2 : want == "avx512" ? Isa::Avx512 : Isa::None;
    if (isa == Isa::None) return {Isa::None, "MLXR_KERNEL_ISA must be avx2 or avx512, got '" + want + "'"};
    if (!cpu_has(isa)) return {Isa::None, "MLXR_KERNEL_ISA=" + want + ": this CPU does not have that instruction set"};
    return {isa, ""};
  }();
  if (!chosen.second.empty()) throw std::invalid_argument(chosen.second);
  return chosen.first;
}

Isa isa_of_call(int isa_code) {
  if (isa_code < 0 || isa_code > 2) throw std::invalid_argument("isa must be 0, 1 or 2, got " + std::to_string(isa_code));
  if (isa_code == 0) return default_isa();
  Isa isa = static_cast<Isa>(isa_code);
  if (!cpu_has(isa)) {
    throw std::invalid_argument(std::string("isa: this CPU does not have ") + (isa == Isa::Avx512 ? "AVX-512" : "AVX2/F16C"));
  }
  return isa;
}

}  // namespace mlxr
