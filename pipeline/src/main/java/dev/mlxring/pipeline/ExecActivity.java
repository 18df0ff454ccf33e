package dev.mlxring.pipeline;

/**
 * What the exec thread is doing now, for health and metrics: the kind of work unit it is inside
 * and since when. A stall (a unit that takes minutes: a huge prefill chunk, a blocked collective)
 * is then visible from outside while it lasts.
 *
 * <p>Written by the exec thread only, around each unit; read by any thread. The three fields are
 * published through one volatile write of {@code sinceNs} last, so a reader that sees a non-zero
 * {@code sinceNs} sees that unit's kind and rows (a reader racing a new unit may pair the new
 * start with the old kind for one read; health tolerates that).
 */
public final class ExecActivity {
    /** The kinds of exec work unit. */
    public enum Unit {
        /** A batch unit that may read a prompt chunk (and steps the generating rows). */
        BATCH,
        /** A batch unit that only steps the generating rows (prefill waits). */
        BATCH_DECODE_ONLY,
        /** One step of a session running alone (prefill chunk or decode step). */
        SOLO;

        /** The lower-case name used in health and metrics. */
        public String label() {
            return switch (this) {
                case BATCH -> "batch";
                case BATCH_DECODE_ONLY -> "batch_decode_only";
                case SOLO -> "solo";
            };
        }
    }

    /** A snapshot: the unit's kind, its rows, and how long it has run; {@code unit} null when idle. */
    public record Snapshot(Unit unit, int rows, long ageNs) {
        /** Exec is between units (idle or at a safe point). */
        public static final Snapshot IDLE = new Snapshot(null, 0, 0);

        public boolean busy() {
            return unit != null;
        }
    }

    private Unit unit;
    private int rows;
    private volatile long sinceNs;

    /** Exec thread: a unit of {@code kind} over {@code rows} rows starts at {@code nowNs}. */
    void begin(Unit kind, int rows, long nowNs) {
        this.unit = kind;
        this.rows = rows;
        this.sinceNs = Math.max(nowNs, 1L);
    }

    /** Exec thread: the unit ended. */
    void end() {
        this.sinceNs = 0;
    }

    /** Any thread: what exec is doing now. */
    public Snapshot snapshot() {
        long since = sinceNs;
        if (since == 0) {
            return Snapshot.IDLE;
        }
        Unit u = unit;
        return u == null ? Snapshot.IDLE : new Snapshot(u, rows, Math.max(0, System.nanoTime() - since));
    }
}
