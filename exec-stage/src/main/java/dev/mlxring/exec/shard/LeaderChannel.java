package dev.mlxring.exec.shard;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Rank 0's end of the control channel: one TCP connection to every other rank, over which it
 * sends each executor call it makes ({@link ShardedExecutor}) so the other ranks replay them in
 * the same order, and a heartbeat.
 *
 * <p>Why a side channel and not MLX's own collectives (mlx_lm.server shares each request with
 * two {@code all_sum}s): a collective has no timeout, so a rank that stops answering would hang
 * rank 0's exec thread for ever, and it would cost two round trips over the group per message.
 * This channel is one small frame per executor call, one-way (the collectives inside the step
 * already synchronize the ranks), and liveness is watched apart from the exec thread.
 *
 * <p>Failure: a rank whose connection closes (it exited or was killed), that reports
 * {@code FAILED}, or that has not answered a heartbeat for {@code timeoutNs} fails the group
 * once: the reason is kept ({@link #failure()}), every connection is closed (so the other ranks
 * exit) and {@code abort} runs (it shuts the ring backend's sockets, so a collective that waits
 * on the dead rank returns with an error instead of blocking). From then on {@link #send} throws
 * {@link ShardGroupException}.
 *
 * <p>Threads: {@link #send} from the exec thread; one reader thread per rank and one heartbeat
 * thread ({@code mlxring-shard-*}, daemons). Writers of one connection are serialized on it.
 */
public final class LeaderChannel implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LeaderChannel.class.getName());

    /** One follower's connection. */
    private static final class Peer {
        final int rank;
        final Socket socket;
        final DataOutputStream out;
        final DataInputStream in;
        volatile long lastHeardNs = System.nanoTime();

        Peer(int rank, Socket socket, DataOutputStream out, DataInputStream in) {
            this.rank = rank;
            this.socket = socket;
            this.out = out;
            this.in = in;
        }
    }

    private final List<Peer> peers;
    private final long timeoutNs;
    private final Runnable abort;
    private final Thread heartbeat;
    private volatile String failure;
    /** Completes with the reason when the group fails. */
    private final CompletableFuture<String> failed = new CompletableFuture<>();

    private volatile boolean closing;

    private LeaderChannel(List<Peer> peers, long timeoutNs, Runnable abort) {
        this.peers = List.copyOf(peers);
        this.timeoutNs = timeoutNs;
        this.abort = abort;
        for (Peer p : this.peers) {
            Thread t = new Thread(() -> read(p), "mlxring-shard-read-" + p.rank);
            t.setDaemon(true);
            t.start();
        }
        heartbeat = new Thread(this::beat, "mlxring-shard-heartbeat");
        heartbeat.setDaemon(true);
        heartbeat.start();
    }

    /**
     * Listens on {@code bind} until every rank 1..{@code ranks}-1 has connected and said hello
     * with {@code fingerprint} (the same model), answering each with {@code welcome}.
     *
     * @param startupNs how long the other ranks may take to connect
     * @param timeoutNs how long a rank may stay silent before the group fails
     * @param abort what unblocks a collective stuck on a lost rank (run once, on failure)
     * @throws IllegalStateException naming the rank that did not come, or that runs another model
     */
    public static LeaderChannel accept(
            InetSocketAddress bind,
            int ranks,
            String fingerprint,
            Welcome welcome,
            long startupNs,
            long timeoutNs,
            Runnable abort)
            throws IOException {
        long deadline = System.nanoTime() + startupNs;
        Peer[] byRank = new Peer[ranks];
        List<Socket> opened = new ArrayList<>();
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            server.bind(bind);
            int connected = 0;
            while (connected < ranks - 1) {
                long leftMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (leftMs <= 0) {
                    throw new IllegalStateException("the control channel on " + bind + ": only " + connected + " of "
                            + (ranks - 1) + " other ranks connected within " + TimeUnit.NANOSECONDS.toSeconds(startupNs)
                            + " s (missing: " + missing(byRank) + ")");
                }
                server.setSoTimeout((int) Math.min(leftMs, Integer.MAX_VALUE));
                Socket s;
                try {
                    s = server.accept();
                } catch (SocketTimeoutException e) {
                    continue;
                }
                opened.add(s);
                s.setTcpNoDelay(true);
                s.setSoTimeout((int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(timeoutNs)));
                DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
                Frame hello = Frame.readFrom(in);
                if (hello.type() != Frame.HELLO) {
                    throw new IllegalStateException("the control channel on " + bind + " got frame type " + hello.type()
                            + " instead of a hello (another program on this port?)");
                }
                DataInputStream body = hello.body();
                int rank = body.readInt();
                String theirs = body.readUTF();
                if (rank < 1 || rank >= ranks || byRank[rank] != null) {
                    throw new IllegalStateException("the control channel got a hello from rank " + rank
                            + " (expected each of 1.." + (ranks - 1) + " once)");
                }
                if (!theirs.equals(fingerprint)) {
                    Frame.of(Frame.FAILED, o -> o.writeUTF("rank 0 runs another model"))
                            .writeTo(out);
                    throw new IllegalStateException("rank " + rank + " loaded another model than rank 0 (fingerprint "
                            + theirs + ", rank 0 has " + fingerprint + "): give every rank the same --model");
                }
                s.setSoTimeout(0);
                Frame.of(Frame.WELCOME, welcome::write).writeTo(out);
                byRank[rank] = new Peer(rank, s, out, in);
                connected++;
            }
        } catch (IOException | RuntimeException e) {
            for (Socket s : opened) {
                closeQuietly(s);
            }
            throw e;
        }
        List<Peer> peers = new ArrayList<>();
        for (int r = 1; r < ranks; r++) {
            peers.add(byRank[r]);
        }
        return new LeaderChannel(peers, timeoutNs, abort);
    }

    private static String missing(Peer[] byRank) {
        List<Integer> m = new ArrayList<>();
        for (int r = 1; r < byRank.length; r++) {
            if (byRank[r] == null) {
                m.add(r);
            }
        }
        return "ranks " + m;
    }

    /** Sends {@code frame} to every other rank, in call order. Exec thread. */
    void send(Frame frame) {
        String why = failure;
        if (why != null) {
            throw new ShardGroupException(why);
        }
        for (Peer p : peers) {
            try {
                synchronized (p.out) {
                    frame.writeTo(p.out);
                }
            } catch (IOException e) {
                fail("rank " + p.rank + ": the control connection broke (" + e.getMessage() + ")");
                throw new ShardGroupException(failure);
            }
        }
    }

    /** Completes with the reason once the group fails (never after an orderly close). */
    CompletableFuture<String> failedFuture() {
        return failed;
    }

    /** Why the group failed, or null while every rank answers. Any thread. */
    public String failure() {
        return failure;
    }

    /** Fails the group once with {@code reason} (later calls keep the first reason). Any thread. */
    void fail(String reason) {
        synchronized (this) {
            if (failure != null || closing) {
                return;
            }
            failure = reason;
        }
        failed.complete(reason);
        LOG.log(
                System.Logger.Level.ERROR,
                "tensor-parallel group failed: " + reason
                        + "; failing the requests in flight, the server reports unhealthy");
        try {
            abort.run();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "could not abort the group's collectives", e);
        }
        for (Peer p : peers) {
            closeQuietly(p.socket);
        }
    }

    private void read(Peer p) {
        try {
            while (true) {
                Frame f = Frame.readFrom(p.in);
                p.lastHeardNs = System.nanoTime();
                if (f.type() == Frame.FAILED) {
                    fail("rank " + p.rank + " failed: " + f.body().readUTF());
                    return;
                }
                if (f.type() != Frame.PONG) {
                    fail("rank " + p.rank + " sent an unexpected control frame (type " + f.type() + ")");
                    return;
                }
            }
        } catch (IOException e) {
            if (!closing) {
                fail("rank " + p.rank + " closed its control connection (the process exited or was killed)");
            }
        }
    }

    private void beat() {
        long intervalNs =
                Math.max(TimeUnit.MILLISECONDS.toNanos(50), Math.min(TimeUnit.SECONDS.toNanos(1), timeoutNs / 5));
        Frame ping = Frame.empty(Frame.PING);
        while (!closing && failure == null) {
            for (Peer p : peers) {
                long silentNs = System.nanoTime() - p.lastHeardNs;
                if (silentNs > timeoutNs) {
                    fail("rank " + p.rank + " stopped answering (no heartbeat for "
                            + TimeUnit.NANOSECONDS.toMillis(silentNs) + " ms)");
                    return;
                }
                try {
                    synchronized (p.out) {
                        ping.writeTo(p.out);
                    }
                } catch (IOException e) {
                    if (!closing) {
                        fail("rank " + p.rank + ": the control connection broke (" + e.getMessage() + ")");
                    }
                    return;
                }
            }
            try {
                Thread.sleep(TimeUnit.NANOSECONDS.toMillis(intervalNs));
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Tells every rank to shut down (best effort) and closes the connections. */
    @Override
    public void close() {
        boolean up;
        synchronized (this) {
            up = failure == null;
            // First: a rank that closes its end on SHUTDOWN is then no failure.
            closing = true;
        }
        if (up) {
            try {
                send(Frame.empty(Frame.SHUTDOWN));
            } catch (ShardGroupException e) {
                // a rank is gone already: nothing to tell it
            }
        }
        heartbeat.interrupt();
        for (Peer p : peers) {
            closeQuietly(p.socket);
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing anyway
        }
    }
}
