// Scalar helpers of both fast-tier kernel files (mlxr_fastnum_avx2.cpp,
// mlxr_fastnum_avx512.cpp), included inside each file's anonymous namespace
// after its target pragma so each gets its own copy.

// One group parameter widened exactly to float.
MLXR_INLINE float param_at(const void* base, Dt dt, size_t i) {
  switch (dt) {
    case Dt::F32: return static_cast<const float*>(base)[i];
    case Dt::F16: return _cvtsh_ss(static_cast<const uint16_t*>(base)[i]);
    default: {
      uint32_t u = uint32_t(static_cast<const uint16_t*>(base)[i]) << 16;
      float f;
      __builtin_memcpy(&f, &u, sizeof f);
      return f;
    }
  }
}

// out[i] = v rounded to nearest even in dt (a NaN stays a quiet NaN).
MLXR_INLINE void store_out(void* out, Dt dt, size_t i, float v) {
  switch (dt) {
    case Dt::F32: static_cast<float*>(out)[i] = v; break;
    case Dt::F16: static_cast<uint16_t*>(out)[i] = _cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT); break;
    default: {
      uint32_t u;
      __builtin_memcpy(&u, &v, sizeof u);
      uint16_t h = v != v ? uint16_t(0x7fc0) : uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
      static_cast<uint16_t*>(out)[i] = h;
      break;
    }
  }
}
