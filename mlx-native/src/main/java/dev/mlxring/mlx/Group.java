package dev.mlxring.mlx;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * An MLX distributed group ({@code mx.distributed.Group}): the processes a launcher started
 * ({@code mlx.launch}: ring over TCP, MPI, NCCL between NVIDIA GPUs, JACCL between Macs), each
 * with its rank, and the collectives over them. {@link #init} is {@code mx.distributed.init}.
 *
 * <p>MLX caches each backend's group for the life of the process, so {@link #close()} frees
 * only this handle, never the connections. The collectives build graph nodes like any op (run
 * on the exec thread, inside an {@link ArrayScope}); {@link #rank()} and {@link #size()} may be
 * read from any thread.
 */
public final class Group implements AutoCloseable {
    /** The backends {@code mx.distributed.init(backend=...)} accepts. */
    public static final List<String> BACKENDS = List.of("any", "ring", "mpi", "nccl", "jaccl");

    private MemorySegment handle;
    private final int rank;
    private final int size;
    private final String backend;

    private Group(MemorySegment handle, String backend) {
        this.handle = handle;
        this.rank = DistributedShim.groupRank(handle);
        this.size = DistributedShim.groupSize(handle);
        this.backend = backend;
    }

    /**
     * {@code mx.distributed.init(strict, backend)}: joins the group the launcher's environment
     * describes ({@code MLX_RANK} and {@code MLX_HOSTFILE} for ring, {@code NCCL_HOST_IP} /
     * {@code NCCL_PORT} / {@code MLX_WORLD_SIZE} for nccl, ...). Without such an environment a
     * non-strict init returns the singleton group (size 1); a strict one throws.
     *
     * @throws IllegalArgumentException for a backend name MLX does not know
     * @throws MlxException with MLX's message when the backend cannot start
     */
    public static Group init(String backend, boolean strict) {
        if (!BACKENDS.contains(backend)) {
            throw new IllegalArgumentException(
                    "distributed backend must be one of " + BACKENDS + ", got '" + backend + "'");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment h = DistributedShim.init(arena.allocateFrom(backend), strict ? 1 : 0);
            if (h.address() == 0) {
                throw new MlxException("[distributed] " + backend + ": " + Shim.lastError());
            }
            return new Group(h, backend);
        }
    }

    /** Whether this libmlx was built with {@code backend}. */
    public static boolean isAvailable(String backend) {
        try (Arena arena = Arena.ofConfined()) {
            int rc = DistributedShim.isAvailable(arena.allocateFrom(backend));
            if (rc < 0) {
                throw new MlxException(Shim.lastError());
            }
            return rc == 1;
        }
    }

    public int rank() {
        return rank;
    }

    public int size() {
        return size;
    }

    /** The backend name {@link #init} was asked for ({@code any} lets MLX choose). */
    public String backend() {
        return backend;
    }

    /** {@code mx.distributed.all_sum(x, group=this)}: every rank gets the elementwise sum. */
    public MlxArray allSum(MlxArray x) {
        return MlxArray.own(DistributedShim.allSum(x.handle(), handle()));
    }

    /** {@code mx.distributed.all_gather(x, group=this)}: the ranks' arrays concatenated on axis 0. */
    public MlxArray allGather(MlxArray x) {
        return MlxArray.own(DistributedShim.allGather(x.handle(), handle()));
    }

    /**
     * Aborts a ring group's connections: shuts down every socket of this process bound to or
     * connected to one of {@code endpoints} (the ring hostfile's {@code ip:port} entries). A
     * collective blocked on a peer that stopped answering then fails with MLX's
     * "[ring] connection to a peer was lost" instead of waiting forever; the group cannot be
     * used afterwards. Any thread. Returns how many sockets were shut down.
     */
    public static int abortRingSockets(List<String> endpoints) {
        try (Arena arena = Arena.ofConfined()) {
            int n = DistributedShim.ringAbortSockets(arena.allocateFrom(String.join(",", endpoints)));
            if (n < 0) {
                throw new MlxException(Shim.lastError());
            }
            return n;
        }
    }

    private MemorySegment handle() {
        if (handle == null) {
            throw new IllegalStateException("Group used after close");
        }
        return handle;
    }

    @Override
    public void close() {
        if (handle != null) {
            DistributedShim.groupFree(handle);
            handle = null;
        }
    }

    @Override
    public String toString() {
        return "Group[rank " + rank + " of " + size + ", " + backend + "]";
    }
}
