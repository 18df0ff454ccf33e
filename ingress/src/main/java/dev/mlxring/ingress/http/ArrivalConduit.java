package dev.mlxring.ingress.http;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import org.xnio.channels.StreamSinkChannel;
import org.xnio.conduits.AbstractStreamSourceConduit;
import org.xnio.conduits.StreamSourceConduit;

/**
 * The bottom of a connection's read side: passes every read through and tells the connection's
 * {@link ConnectionClock} when bytes arrived, which is how it sees a request begin.
 */
final class ArrivalConduit extends AbstractStreamSourceConduit<StreamSourceConduit> {
    private final ConnectionClock clock;

    ArrivalConduit(StreamSourceConduit next, ConnectionClock clock) {
        super(next);
        this.clock = clock;
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        return arrived(next.read(dst));
    }

    @Override
    public long read(ByteBuffer[] dsts, int offs, int len) throws IOException {
        return arrived(next.read(dsts, offs, len));
    }

    @Override
    public long transferTo(long position, long count, FileChannel target) throws IOException {
        return arrived(next.transferTo(position, count, target));
    }

    @Override
    public long transferTo(long count, ByteBuffer throughBuffer, StreamSinkChannel target) throws IOException {
        long n = next.transferTo(count, throughBuffer, target);
        if (n > 0 || throughBuffer.hasRemaining()) {
            clock.bytesArrived();
        }
        return n;
    }

    private int arrived(int n) {
        if (n > 0) {
            clock.bytesArrived();
        }
        return n;
    }

    private long arrived(long n) {
        if (n > 0) {
            clock.bytesArrived();
        }
        return n;
    }
}
