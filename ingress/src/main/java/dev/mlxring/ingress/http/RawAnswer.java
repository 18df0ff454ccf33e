package dev.mlxring.ingress.http;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.xnio.IoUtils;
import org.xnio.StreamConnection;
import org.xnio.XnioExecutor;
import org.xnio.conduits.ConduitStreamSinkChannel;
import org.xnio.conduits.ConduitStreamSourceChannel;

/**
 * A complete HTTP/1.1 error response written straight to a connection that no exchange owns (one
 * refused over the connection cap, one whose request head timed out), then a lingering close: the
 * response, the end of the sending side, and reads discarded until the client closes or
 * {@link #LINGER_MS} pass. Closing at once with the client's request unread would make the kernel
 * answer with a reset, which can destroy the response before the client reads it.
 *
 * <p>Threading: {@link #send} runs on the connection's IO thread, as do the listeners it sets.
 */
final class RawAnswer {
    /** How long a closing connection's reads are drained at most. */
    static final long LINGER_MS = 2000;

    private final StreamConnection connection;
    private final ByteBuffer bytes;
    private XnioExecutor.Key linger;

    private RawAnswer(StreamConnection connection, ByteBuffer bytes) {
        this.connection = connection;
        this.bytes = bytes;
    }

    /**
     * The bytes of a response: {@code status} with its reason, a JSON {@code body}, any
     * {@code extraHeaders} (each a whole "Name: value" line), and {@code Connection: close}.
     */
    static byte[] response(int status, String reason, String body, String... extraHeaders) {
        byte[] json = body.getBytes(StandardCharsets.UTF_8);
        StringBuilder head = new StringBuilder(160)
                .append("HTTP/1.1 ")
                .append(status)
                .append(' ')
                .append(reason)
                .append("\r\nContent-Type: application/json\r\nContent-Length: ")
                .append(json.length)
                .append("\r\n");
        for (String h : extraHeaders) {
            head.append(h).append("\r\n");
        }
        byte[] h = head.append("Connection: close\r\n\r\n").toString().getBytes(StandardCharsets.US_ASCII);
        byte[] all = new byte[h.length + json.length];
        System.arraycopy(h, 0, all, 0, h.length);
        System.arraycopy(json, 0, all, h.length, json.length);
        return all;
    }

    /** Writes {@code response} to {@code connection} and closes it (see the class comment). IO thread only. */
    static void send(StreamConnection connection, byte[] response) {
        RawAnswer a = new RawAnswer(connection, ByteBuffer.wrap(response));
        ConduitStreamSourceChannel source = connection.getSourceChannel();
        // Whoever was reading (Undertow's request parser) reads no more.
        source.suspendReads();
        source.setReadListener(null);
        connection.getSinkChannel().setWriteListener(a::writable);
        a.writable(connection.getSinkChannel());
    }

    private void writable(ConduitStreamSinkChannel sink) {
        try {
            while (bytes.hasRemaining()) {
                if (sink.write(bytes) == 0) {
                    sink.resumeWrites();
                    return;
                }
            }
            sink.shutdownWrites();
            if (!sink.flush()) {
                sink.resumeWrites();
                return;
            }
            sink.suspendWrites();
            linger();
        } catch (IOException | RuntimeException e) {
            IoUtils.safeClose(connection);
        }
    }

    private void linger() {
        try {
            linger = connection
                    .getIoThread()
                    .executeAfter(() -> IoUtils.safeClose(connection), LINGER_MS, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException stopping) {
            IoUtils.safeClose(connection); // the server is stopping: no time to linger
            return;
        }
        ConduitStreamSourceChannel source = connection.getSourceChannel();
        source.setReadListener(this::drain);
        drain(source);
    }

    private void drain(ConduitStreamSourceChannel source) {
        ByteBuffer scratch = ByteBuffer.allocate(1024);
        try {
            int n;
            while ((n = source.read(scratch)) > 0) {
                scratch.clear();
            }
            if (n == 0) {
                source.resumeReads();
                return;
            }
        } catch (IOException | RuntimeException e) {
            // the client is gone: nothing more to drain
        }
        linger.remove();
        IoUtils.safeClose(connection);
    }
}
