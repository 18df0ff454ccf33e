package dev.mlxring.exec.shard;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.Group;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What a process started by MLX's launcher ({@code mlx.launch}) learns from its environment:
 * whether it is a rank at all, the group it joins ({@link #join}, bounded), the ring backend's
 * addresses (for the abort) and where rank 0's control channel listens.
 *
 * <p>{@code mlx.launch} gives every rank {@code MLX_RANK}; the ring backend also
 * {@code MLX_HOSTFILE} (a JSON file: one list of {@code "ip:port"} per rank), NCCL
 * {@code NCCL_HOST_IP}, {@code NCCL_PORT} and {@code MLX_WORLD_SIZE}; {@code mpirun} sets
 * {@code OMPI_COMM_WORLD_SIZE} (or {@code PMI_SIZE}). Immutable.
 *
 * @param env the process environment
 * @param backend the backend to ask {@code mx.distributed.init} for ({@code any} lets MLX pick)
 * @param controlHost where followers find rank 0's control channel; null = derived (below)
 * @param controlPort its port; 0 = derived (below)
 */
public record ShardLaunch(Map<String, String> env, String backend, String controlHost, int controlPort) {
    /** The one environment variable every mlx.launch backend sets. */
    public static final String RANK_VARIABLE = "MLX_RANK";

    /** Whether this process is one rank of a launch (and so must form a group). */
    public boolean launched() {
        return env.containsKey(RANK_VARIABLE) || env.containsKey("OMPI_COMM_WORLD_SIZE") || env.containsKey("PMI_SIZE");
    }

    /**
     * {@code mx.distributed.init(strict=True, backend)}, waiting at most {@code timeoutNs} for the
     * other ranks (the ring backend blocks until its neighbours connect).
     *
     * @throws IllegalStateException when the group does not form in time, or MLX refuses
     */
    public Group join(long timeoutNs) {
        AtomicReference<Object> result = new AtomicReference<>();
        Thread t = new Thread(
                () -> {
                    try {
                        result.set(Group.init(backend, true));
                    } catch (RuntimeException e) {
                        result.set(e);
                    }
                },
                "mlxring-shard-join");
        t.setDaemon(true);
        t.start();
        try {
            t.join(TimeUnit.NANOSECONDS.toMillis(timeoutNs));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while joining the distributed group", e);
        }
        Object r = result.get();
        if (r instanceof Group g) {
            return g;
        }
        if (r instanceof RuntimeException e) {
            throw new IllegalStateException(
                    "could not join the distributed group (backend " + backend + "): " + e.getMessage(), e);
        }
        throw new IllegalStateException("the distributed group did not form within "
                + TimeUnit.NANOSECONDS.toSeconds(timeoutNs) + " s (backend " + backend + ", " + RANK_VARIABLE + "="
                + env.get(RANK_VARIABLE) + "): are all ranks started, and can they reach each other?");
    }

    /**
     * The backend this launch runs: the one asked for, or for {@code any} the one the launch's
     * environment is for (what MLX's init then picks), for messages.
     */
    public String backendName() {
        if (!backend.equals("any")) {
            return backend;
        }
        if (env.containsKey("MLX_HOSTFILE")) {
            return "ring";
        }
        if (env.containsKey("NCCL_HOST_IP")) {
            return "nccl";
        }
        if (env.containsKey("OMPI_COMM_WORLD_SIZE") || env.containsKey("PMI_SIZE")) {
            return "mpi";
        }
        return "any";
    }

    /** The ring hostfile's {@code ip:port} entries, rank by rank; empty when there is none. */
    public List<List<String>> ringNodes() {
        String file = env.get("MLX_HOSTFILE");
        if (file == null || file.isBlank()) {
            return List.of();
        }
        try {
            JsonNode doc = new ObjectMapper().readTree(Files.readString(Path.of(file)));
            List<List<String>> nodes = new ArrayList<>();
            for (JsonNode rank : doc) {
                List<String> addrs = new ArrayList<>();
                rank.forEach(a -> addrs.add(a.asText()));
                nodes.add(addrs);
            }
            return nodes;
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read MLX_HOSTFILE " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * Rank 0's control channel: {@code --control-host} / {@code --control-port} when given;
     * otherwise, with a ring hostfile, rank 0's first ring address with its port minus one
     * (mlx.launch numbers the ring ports upward from {@code --starting-port}, 32323 by default, so
     * the port below is the launcher's and free); with NCCL, {@code NCCL_HOST_IP} and
     * {@code NCCL_PORT + 1}.
     */
    public InetSocketAddress controlAddress() {
        String host = controlHost;
        int port = controlPort;
        List<List<String>> ring = ringNodes();
        if (!ring.isEmpty() && !ring.get(0).isEmpty()) {
            String first = ring.get(0).get(0);
            int colon = first.lastIndexOf(':');
            if (host == null) {
                host = first.substring(0, colon);
            }
            if (port == 0) {
                port = Integer.parseInt(first.substring(colon + 1)) - 1;
            }
        } else if (env.containsKey("NCCL_HOST_IP")) {
            if (host == null) {
                host = env.get("NCCL_HOST_IP");
            }
            if (port == 0 && env.containsKey("NCCL_PORT")) {
                port = Integer.parseInt(env.get("NCCL_PORT")) + 1;
            }
        }
        if (host == null || port == 0) {
            throw new IllegalStateException("cannot tell where rank 0's control channel listens (no ring hostfile, no "
                    + "NCCL_HOST_IP): give --control-host HOST --control-port PORT to every rank");
        }
        return new InetSocketAddress(host, port);
    }

    /**
     * What unblocks a collective waiting on a rank that is gone: for the ring backend, shutting
     * down this process's sockets to and from the hostfile's addresses (the ring then fails the
     * pending collective); the other backends have no such handle in MLX (nothing is done).
     */
    public Runnable abort() {
        List<String> endpoints = new ArrayList<>();
        ringNodes().forEach(endpoints::addAll);
        if (endpoints.isEmpty()) {
            return () -> {};
        }
        return () -> Group.abortRingSockets(endpoints);
    }
}
