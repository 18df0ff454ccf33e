package dev.mlxring.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Reads a response body to its end before it is closed, for clients on the JDK's
 * {@link java.net.http.HttpClient} that stop at {@code data: [DONE]}. Closing the body stream
 * before the chunked body's last chunk cancels the exchange, and that cancel can race the return
 * of the same connection to the client's pool: the next request then goes out on a connection
 * being closed and fails with "HTTP/1.1 header parser received no bytes", whichever server is
 * measured. A body that has not ended {@link #WITHIN} after the call is closed (a server that
 * never ends it cannot hold a client's thread).
 *
 * <p>Thread-safe; the closing timer is one daemon thread shared by every caller.
 */
public final class BodyEnd {
    /** How long after the last event a body may take to end before it is closed. */
    public static final Duration WITHIN = Duration.ofSeconds(5);

    private static final ScheduledExecutorService CLOSER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "bench-body-end");
        t.setDaemon(true);
        return t;
    });

    private BodyEnd() {}

    /**
     * Reads {@code body} to its end, or closes it {@code within} after the call.
     *
     * @return whether the body ended by itself (false: it broke or was closed for lateness)
     */
    public static boolean drain(InputStream body, Duration within) {
        AtomicBoolean cut = new AtomicBoolean();
        ScheduledFuture<?> closing = CLOSER.schedule(
                () -> {
                    cut.set(true);
                    try {
                        body.close();
                    } catch (IOException e) {
                        // closing is all that is asked of it
                    }
                },
                within.toNanos(),
                TimeUnit.NANOSECONDS);
        try {
            body.transferTo(OutputStream.nullOutputStream());
            return !cut.get();
        } catch (IOException e) {
            return false;
        } finally {
            closing.cancel(false);
        }
    }
}
