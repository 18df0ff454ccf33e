// The fused decoder blocks' shared pieces that need one definition (mlxr_block.h).

#include "mlxr_block.h"

namespace mlxr::block {

namespace {

// mlx::core::array keeps its descriptor private, and is_donatable() asks for a single owner of
// it, which an input of a multi-output primitive never has: make_arrays gives each output its
// own copy of the inputs. desc_owners reads the descriptor's owner count instead; naming the
// private member is allowed only as the template argument of an explicit instantiation, which
// is how it is named here.
long desc_owners(const mx::array& a);

template <auto Desc>
struct DescOwners {
  friend long desc_owners(const mx::array& a) {
    return (a.*Desc).use_count();
  }
};

template struct DescOwners<&mx::array::array_desc_>;

}  // namespace

bool donatable_input(const mx::array& in, size_t outputs) {
  return desc_owners(in) == long(outputs) && in.data_shared_ptr().use_count() == 1 &&
         in.data_shared_ptr()->is_owned();
}

void copy_into(const mx::array& a, void* dst) {
  if (a.itemsize() == 4) {
    std::vector<uint32_t> c;
    std::memcpy(dst, row_major<uint32_t, uint32_t>(a, c), a.nbytes());
  } else {
    std::vector<uint16_t> c;
    std::memcpy(dst, row_major<uint16_t, uint16_t>(a, c), a.nbytes());
  }
}

}  // namespace mlxr::block
