package dev.mlxring.exec.shard;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * One message of the control channel between rank 0 and the other ranks: a type byte and its
 * payload, framed on the wire as {@code int length, byte type, payload} (big-endian, as
 * {@link DataOutputStream} writes). Immutable.
 */
record Frame(byte type, byte[] payload) {
    /** Follower to leader, at connect: int rank, UTF model fingerprint. */
    static final byte HELLO = 1;
    /** Leader to follower, the reply: the settings every rank must share ({@link Welcome}). */
    static final byte WELCOME = 2;
    /** Leader to follower, every heartbeat interval; answered by {@link #PONG}. */
    static final byte PING = 3;

    static final byte PONG = 4;
    /** The executor calls rank 0 makes, replayed in order by the other ranks. */
    static final byte OPEN_RUN = 10;

    static final byte ADVANCE = 11;
    static final byte CLOSE_RUN = 12;
    static final byte OPEN_BATCH = 20;
    static final byte INSERT = 21;
    static final byte REMOVE = 22;
    static final byte STEP = 23;
    static final byte CLOSE_BATCH = 24;
    /** Leader to follower: the engine is closing; the follower closes its model and exits 0. */
    static final byte SHUTDOWN = 30;
    /** Either way: this side cannot go on (UTF reason); the other side fails the group. */
    static final byte FAILED = 31;

    /** The most bytes a payload may have (a plan's prompt ids dominate: 16 M tokens). */
    static final int MAX_PAYLOAD_BYTES = 64 << 20;

    /** Writes the payload of a frame. */
    interface Body {
        void write(DataOutputStream out) throws IOException;
    }

    static Frame of(byte type, Body body) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            body.write(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new Frame(type, bytes.toByteArray());
    }

    static Frame empty(byte type) {
        return new Frame(type, new byte[0]);
    }

    DataInputStream body() {
        return new DataInputStream(new ByteArrayInputStream(payload));
    }

    /** Writes this frame and flushes; the caller serializes writers of one stream. */
    void writeTo(DataOutputStream out) throws IOException {
        out.writeInt(payload.length + 1);
        out.writeByte(type);
        out.write(payload);
        out.flush();
    }

    /** Reads one frame; {@link EOFException} when the peer closed the connection. */
    static Frame readFrom(DataInputStream in) throws IOException {
        int length = in.readInt();
        if (length < 1 || length > MAX_PAYLOAD_BYTES + 1) {
            throw new IOException("control frame of " + length + " bytes (the peer speaks another protocol?)");
        }
        byte type = in.readByte();
        byte[] payload = new byte[length - 1];
        in.readFully(payload);
        return new Frame(type, payload);
    }
}
