package dev.mlxring.ingress.http;

import io.undertow.Undertow;
import io.undertow.UndertowOptions;
import io.undertow.connector.ByteBufferPool;
import io.undertow.server.DefaultByteBufferPool;
import io.undertow.server.HttpHandler;
import io.undertow.server.protocol.http.HttpOpenListener;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.function.Function;
import org.xnio.ChannelListeners;
import org.xnio.IoUtils;
import org.xnio.OptionMap;
import org.xnio.Options;
import org.xnio.StreamConnection;
import org.xnio.Xnio;
import org.xnio.XnioWorker;
import org.xnio.channels.AcceptingChannel;

/**
 * The plain-HTTP listener: Undertow's HTTP/1.1 protocol on its XNIO worker, assembled as
 * {@link Undertow#start} assembles it (same worker, socket and buffer settings), with one
 * difference: accepted connections pass through a {@link ConnectionGate} (the connection cap and
 * the read and idle deadlines), which Undertow's builder has no place for. Undertow's own idle
 * timeout is left off: the gate's clocks keep time.
 */
final class HttpListener implements AutoCloseable {
    /** Undertow's buffer for heaps over 128 MB: 16 KiB less room for protocol headers (UNDERTOW-1209). */
    private static final int BUFFER_BYTES = 16 * 1024 - 20;

    private final InetSocketAddress address;
    private final OptionMap serverOptions;
    private final HttpHandler root;
    private final Function<HttpOpenListener, ConnectionGate> gates;
    private XnioWorker worker;
    private ByteBufferPool buffers;
    private AcceptingChannel<StreamConnection> server;
    private ConnectionGate gate;

    /**
     * @param serverOptions Undertow's options (entity size and so on)
     * @param gates builds the gate in front of Undertow's open listener
     */
    HttpListener(
            String host,
            int port,
            OptionMap serverOptions,
            HttpHandler root,
            Function<HttpOpenListener, ConnectionGate> gates) {
        try {
            this.address = new InetSocketAddress(InetAddress.getByName(host), port);
        } catch (java.net.UnknownHostException e) {
            throw new IllegalArgumentException("unknown host " + host, e);
        }
        this.serverOptions = OptionMap.builder()
                .set(UndertowOptions.BUFFER_PIPELINED_DATA, true)
                .addAll(serverOptions)
                .getMap();
        this.root = root;
        this.gates = gates;
    }

    /** Binds and starts accepting; returns the gate that admits the connections. */
    synchronized ConnectionGate start() {
        int ioThreads = Math.max(Runtime.getRuntime().availableProcessors(), 2);
        try {
            worker = Xnio.getInstance(Undertow.class.getClassLoader())
                    .createWorker(OptionMap.builder()
                            .set(Options.WORKER_IO_THREADS, ioThreads)
                            .set(Options.CONNECTION_HIGH_WATER, 1_000_000)
                            .set(Options.CONNECTION_LOW_WATER, 1_000_000)
                            .set(Options.WORKER_TASK_CORE_THREADS, ioThreads * 8)
                            .set(Options.WORKER_TASK_MAX_THREADS, ioThreads * 8)
                            .set(Options.TCP_NODELAY, true)
                            .set(Options.CORK, true)
                            .getMap());
            buffers = new DefaultByteBufferPool(true, BUFFER_BYTES, -1, 4);
            HttpOpenListener open = new HttpOpenListener(buffers, serverOptions);
            gate = gates.apply(open);
            open.setRootHandler(gate.watch(root));
            server = worker.createStreamConnectionServer(
                    address,
                    ChannelListeners.openListenerAdapter(gate),
                    OptionMap.builder()
                            .set(Options.WORKER_IO_THREADS, ioThreads)
                            .set(Options.TCP_NODELAY, true)
                            .set(Options.REUSE_ADDRESSES, true)
                            .set(Options.BALANCING_TOKENS, 1)
                            .set(Options.BALANCING_CONNECTIONS, 2)
                            .set(Options.BACKLOG, 1000)
                            .getMap());
            server.resumeAccepts();
            return gate;
        } catch (IOException e) {
            close();
            throw new UncheckedIOException("cannot listen on " + address, e);
        }
    }

    /** The bound port (useful with port 0). */
    synchronized int port() {
        return server.getLocalAddress(InetSocketAddress.class).getPort();
    }

    /** Stops accepting, closes every connection and ends the worker's threads. Idempotent. */
    @Override
    public synchronized void close() {
        IoUtils.safeClose(server);
        server = null;
        if (worker != null) {
            worker.shutdown();
            try {
                worker.awaitTermination();
            } catch (InterruptedException e) {
                worker.shutdownNow();
                Thread.currentThread().interrupt();
            }
            worker = null;
        }
        if (buffers != null) {
            buffers.close();
            buffers = null;
        }
    }
}
