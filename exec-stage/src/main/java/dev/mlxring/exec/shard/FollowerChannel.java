package dev.mlxring.exec.shard;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A follower rank's end of the control channel (see {@link LeaderChannel}): connects to rank 0,
 * says hello (its rank and model fingerprint), receives the {@link Welcome}, then hands rank 0's
 * executor calls to the follower's MLX thread in order ({@link #take}) while its reader thread
 * answers the heartbeat.
 *
 * <p>Failure: if rank 0 closes the connection, or sends nothing (not even a heartbeat) for
 * {@code timeoutNs}, {@code onLost} runs once on the watching thread with the reason; the
 * follower's MLX thread may be blocked in a collective at that moment, so {@code onLost} is
 * expected to end the process. Threads: the reader and a watchdog ({@code mlxring-shard-*},
 * daemons); {@link #take} and {@link #reportFailure} from the follower's MLX thread.
 */
public final class FollowerChannel implements AutoCloseable {
    /** What {@link #take} returns once the connection is gone. */
    static final Frame LOST = Frame.empty((byte) -1);

    private final Socket socket;
    private final DataOutputStream out;
    private final DataInputStream in;
    private final Welcome welcome;
    private final BlockingQueue<Frame> inbox = new LinkedBlockingQueue<>();
    private final long timeoutNs;
    private final Consumer<String> onLost;
    private volatile long lastHeardNs = System.nanoTime();
    private volatile boolean closing;
    private volatile String lost;

    private FollowerChannel(
            Socket socket,
            DataOutputStream out,
            DataInputStream in,
            Welcome welcome,
            long timeoutNs,
            Consumer<String> onLost) {
        this.socket = socket;
        this.out = out;
        this.in = in;
        this.welcome = welcome;
        this.timeoutNs = timeoutNs;
        this.onLost = onLost;
        Thread reader = new Thread(this::read, "mlxring-shard-read-0");
        reader.setDaemon(true);
        reader.start();
        Thread watchdog = new Thread(this::watch, "mlxring-shard-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    /**
     * Connects to rank 0 at {@code leader}, retrying until {@code startupNs} has passed (rank 0
     * listens once its own group set-up is done).
     *
     * @throws IllegalStateException when rank 0 does not answer in time or refuses this rank
     */
    public static FollowerChannel connect(
            InetSocketAddress leader,
            int rank,
            String fingerprint,
            long startupNs,
            long timeoutNs,
            Consumer<String> onLost)
            throws IOException {
        long deadline = System.nanoTime() + startupNs;
        IOException last = null;
        while (System.nanoTime() < deadline) {
            Socket s = new Socket();
            try {
                s.connect(leader, (int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
                s.setTcpNoDelay(true);
                s.setSoTimeout((int)
                        Math.max(1, TimeUnit.NANOSECONDS.toMillis(Math.max(timeoutNs, deadline - System.nanoTime()))));
                DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
                DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                Frame.of(Frame.HELLO, o -> {
                            o.writeInt(rank);
                            o.writeUTF(fingerprint);
                        })
                        .writeTo(out);
                Frame reply = Frame.readFrom(in);
                if (reply.type() == Frame.FAILED) {
                    s.close();
                    throw new IllegalStateException(
                            "rank 0 refused rank " + rank + ": " + reply.body().readUTF());
                }
                if (reply.type() != Frame.WELCOME) {
                    s.close();
                    throw new IllegalStateException(
                            "rank 0's control channel answered with frame type " + reply.type());
                }
                s.setSoTimeout(0);
                return new FollowerChannel(s, out, in, Welcome.read(reply.body()), timeoutNs, onLost);
            } catch (IOException e) {
                last = e;
                s.close();
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while connecting to rank 0", ie);
                }
            }
        }
        throw new IllegalStateException("rank 0's control channel at " + leader + " did not answer within "
                + TimeUnit.NANOSECONDS.toSeconds(startupNs) + " s" + (last == null ? "" : ": " + last.getMessage()));
    }

    public Welcome welcome() {
        return welcome;
    }

    /** The next executor call from rank 0, or {@link #LOST}. Blocks. Follower MLX thread. */
    Frame take() throws InterruptedException {
        return inbox.take();
    }

    /** The next frame within {@code timeoutMs}, or null. */
    Frame poll(long timeoutMs) throws InterruptedException {
        return inbox.poll(Math.max(0, timeoutMs), TimeUnit.MILLISECONDS);
    }

    /** Tells rank 0 this rank cannot go on (best effort), so it fails the group at once. */
    void reportFailure(String reason) {
        try {
            synchronized (out) {
                Frame.of(Frame.FAILED, o -> o.writeUTF(reason)).writeTo(out);
            }
        } catch (IOException e) {
            // rank 0 is gone already
        }
    }

    private void read() {
        Frame pong = Frame.empty(Frame.PONG);
        try {
            while (true) {
                Frame f = Frame.readFrom(in);
                lastHeardNs = System.nanoTime();
                if (f.type() == Frame.PING) {
                    synchronized (out) {
                        pong.writeTo(out);
                    }
                } else {
                    inbox.add(f);
                    if (f.type() == Frame.SHUTDOWN) {
                        closing = true;
                        return;
                    }
                }
            }
        } catch (IOException e) {
            lose("rank 0 closed the control connection (it exited, was killed, or failed the group)");
        }
    }

    private void watch() {
        long intervalMs = Math.max(20, Math.min(500, TimeUnit.NANOSECONDS.toMillis(timeoutNs) / 10));
        while (!closing && lost == null) {
            long silentNs = System.nanoTime() - lastHeardNs;
            if (silentNs > timeoutNs) {
                lose("rank 0 stopped answering (nothing for " + TimeUnit.NANOSECONDS.toMillis(silentNs) + " ms)");
                return;
            }
            try {
                Thread.sleep(intervalMs);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private void lose(String reason) {
        synchronized (this) {
            if (closing || lost != null) {
                return;
            }
            lost = reason;
        }
        inbox.add(LOST);
        onLost.accept(reason);
    }

    /** Why the connection was lost, or null. */
    String lostReason() {
        return lost;
    }

    @Override
    public void close() {
        closing = true;
        try {
            socket.close();
        } catch (IOException e) {
            // closing anyway
        }
    }
}
