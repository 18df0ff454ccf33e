package dev.mlxring.ingress.http;

import io.undertow.connector.PooledByteBuffer;
import io.undertow.server.HttpServerExchange;
import io.undertow.server.protocol.http.HttpServerConnection;
import java.io.IOException;
import org.xnio.ChannelListener;
import org.xnio.IoUtils;
import org.xnio.conduits.ConduitStreamSourceChannel;

/**
 * Notices a client that closes its connection while its response is still being generated, so
 * that its session is cancelled then and not when the answer is finally written.
 *
 * <p>Why it is needed: once a request's body is read, Undertow reads nothing more from the
 * connection until the exchange ends, so a peer's FIN goes unseen, and a non-streaming request
 * (which writes nothing until it is done) ran to its last token for a client long gone. While
 * armed, this listener reads the connection's raw source (the body's conduit is done with): end of
 * stream or a read error closes the connection, whose close listener cancels the session
 * ({@link EngineGateway#submit}); bytes of a request the client pipelined behind this one are
 * handed back to Undertow's parser as the connection's extra bytes, and the watch ends. A client
 * that only half-closes (shuts down its sending side and still reads) counts as gone, as it does
 * for nginx and uvicorn; HTTP clients close whole.
 *
 * <p>Threading: {@link #arm}, {@link #handleEvent} and {@link #stop} run on the exchange's IO
 * thread only. The exchange must also end there ({@link ExchangeWriter} sends its last bytes from
 * it, after {@link #stop}): Undertow re-installs its own read listener when the exchange ends, and
 * doing both on one thread is what keeps this listener from taking bytes that the next request's
 * parser is already waiting for. Plain HTTP/1.x only; TLS or any other protocol goes unwatched.
 */
final class DisconnectWatch implements ChannelListener<ConduitStreamSourceChannel> {
    private final HttpServerConnection connection;
    private final ConduitStreamSourceChannel source;
    private boolean armed;
    /** Set by {@link #stop}, which may come before a deferred {@link #start}. */
    private boolean stopped;

    private DisconnectWatch(HttpServerConnection connection) {
        this.connection = connection;
        this.source = connection.getChannel().getSourceChannel();
    }

    /**
     * A watch over {@code ex}'s connection, armed on its IO thread (now when called there), or
     * null where the connection cannot be watched. The request body must have been read whole.
     */
    static DisconnectWatch arm(HttpServerExchange ex) {
        if (!(ex.getConnection() instanceof HttpServerConnection c) || c.getSslSession() != null) {
            return null;
        }
        DisconnectWatch w = new DisconnectWatch(c);
        if (ex.isInIoThread()) {
            w.start();
        } else {
            c.getIoThread().execute(w::start);
        }
        return w;
    }

    private void start() {
        if (stopped || connection.getExtraBytes() != null || !connection.isOpen()) {
            return; // the next request's bytes are already buffered: that parser owns the stream
        }
        armed = true;
        // During the exchange the channel reads through the request body's conduit, which reports
        // end of stream once the body is read; the connection's own conduit sees the peer.
        source.setConduit(connection.getOriginalSourceConduit());
        source.setReadListener(this);
        source.resumeReads();
    }

    /** Stops watching (IO thread): the exchange is about to end, and Undertow takes reads back. */
    void stop() {
        stopped = true;
        if (armed) {
            armed = false;
            source.suspendReads();
            source.setReadListener(null);
        }
    }

    @Override
    public void handleEvent(ConduitStreamSourceChannel channel) {
        if (!armed) {
            return;
        }
        PooledByteBuffer pooled = connection.getByteBufferPool().allocate();
        boolean handedOver = false;
        try {
            int n = channel.read(pooled.getBuffer());
            if (n == 0) {
                return; // a spurious wake-up: keep watching
            }
            stop();
            if (n < 0) {
                IoUtils.safeClose(connection);
            } else {
                pooled.getBuffer().flip();
                connection.setExtraBytes(pooled);
                handedOver = true;
            }
        } catch (IOException e) {
            stop();
            IoUtils.safeClose(connection);
        } finally {
            if (!handedOver) {
                pooled.close();
            }
        }
    }
}
