// mlx-ring's C ABI over mlx::core::distributed: the group MLX's launcher sets up
// (mlx.launch: ring over TCP, MPI, NCCL on NVIDIA GPUs, JACCL between Macs) and
// the collectives a tensor-parallel graph needs. Same rules as mlxr_shim.cpp:
// no C++ exception crosses the boundary (guard_array / guard_int), inputs are
// borrowed, every returned handle is the caller's.
//
// A group handle (mlxr_group) is a heap-allocated distributed::Group, a
// shared_ptr to the backend's group. MLX itself caches the backend by name for
// the process, so freeing the handle never tears the connections down.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>

#include "mlx/mlx.h"
#include "mlx/distributed/distributed.h"
#include "mlx/distributed/ops.h"

namespace mx = mlx::core;
namespace md = mlx::core::distributed;

#include "mlxr_guard.h"

using mlxr::guard_array;
using mlxr::guard_int;

typedef void* mlxr_group;

namespace {

inline const mx::array& A(mlxr_array a) {
  return *static_cast<mx::array*>(a);
}

inline const md::Group& G(mlxr_group g) {
  return *static_cast<md::Group*>(g);
}

// "ip:port" of a bound or connected IPv4/IPv6 socket address; empty when it is neither.
std::string endpoint_of(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = {0};
  int port = 0;
  if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
  } else {
    return "";
  }
  return std::string(host) + ":" + std::to_string(port);
}

}  // namespace

extern "C" {

// Whether MLX was built with backend `backend` ("any", "ring", "mpi", "nccl", "jaccl").
int mlxr_distributed_is_available(const char* backend) {
  try {
    return md::is_available(backend) ? 1 : 0;
  } catch (const std::exception& e) {
    mlxr_set_last_error(e.what());
    return -1;
  }
}

// mx.distributed.init(strict, backend): the group of every process the launcher
// started, or (strict = 0 and nothing to join) the singleton group of size 1.
mlxr_group mlxr_distributed_init(const char* backend, int strict) {
  try {
    return new md::Group(md::init(strict != 0, backend));
  } catch (const std::exception& e) {
    mlxr_set_last_error(e.what());
  } catch (...) {
    mlxr_set_last_error("unknown C++ exception in MLX distributed init");
  }
  return nullptr;
}

void mlxr_group_free(mlxr_group g) { delete static_cast<md::Group*>(g); }
int mlxr_group_rank(mlxr_group g) { return G(g).rank(); }
int mlxr_group_size(mlxr_group g) { return G(g).size(); }

// mx.distributed.all_sum(x, group=g) on the default stream (mlx-lm's ShardedToAllLinear).
mlxr_array mlxr_all_sum(mlxr_array x, mlxr_group g) {
  return guard_array([&] { return md::all_sum(A(x), G(g)); });
}

// mx.distributed.all_gather(x, group=g): the ranks' arrays concatenated on axis 0.
mlxr_array mlxr_all_gather(mlxr_array x, mlxr_group g) {
  return guard_array([&] { return md::all_gather(A(x), G(g)); });
}

// Shuts down (SHUT_RDWR) every socket of this process whose local or peer
// address is one of `endpoints` (a comma-separated "ip:port" list: the ring
// hostfile's addresses). MLX has no abort for a ring group; its socket threads
// treat a shut-down socket as a lost peer and fail the pending collective with
// "[ring] connection to a peer was lost", so an eval blocked on a peer that
// stopped answering returns with an error instead of waiting forever. Returns
// how many sockets were shut down, or -1 (mlxr_last_error says why).
int mlxr_ring_abort_sockets(const char* endpoints) {
  std::set<std::string> wanted;
  {
    std::stringstream ss(endpoints);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (!item.empty()) wanted.insert(item);
    }
  }
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) {
    mlxr_set_last_error("cannot list /proc/self/fd");
    return -1;
  }
  int shut = 0;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st;
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
    bool match = false;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_len) == 0) {
      match = wanted.count(endpoint_of(local)) > 0;
    }
    if (!match && getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) == 0) {
      match = wanted.count(endpoint_of(peer)) > 0;
    }
    if (match && shutdown(static_cast<int>(fd), SHUT_RDWR) == 0) shut++;
  }
  closedir(dir);
  return shut;
}

}  // extern "C"
