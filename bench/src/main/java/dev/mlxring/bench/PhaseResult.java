package dev.mlxring.bench;

import java.util.List;

/**
 * One phase as run: its plan entry, its position in the run's order (from 0), every request's
 * record, its wall time (first send to last end) and the CPU the rest of the machine used meanwhile
 * (cores; NaN where it cannot be measured) and, for an in-process run, the bytes the whole JVM
 * allocated meanwhile (-1 when not measured: over HTTP the client's allocation says nothing of the
 * server's) and the pipeline's hand-off latencies ({@code stages}; null when not measured, as over
 * HTTP).
 */
public record PhaseResult(
        PhasePlan.Phase phase,
        int order,
        List<RequestRecord> records,
        long durationNs,
        double foreignCores,
        long allocatedBytes,
        StageLatencies stages) {
    public PhaseResult {
        records = List.copyOf(records);
    }

    /** A phase without hand-off latencies. */
    public PhaseResult(
            PhasePlan.Phase phase,
            int order,
            List<RequestRecord> records,
            long durationNs,
            double foreignCores,
            long allocatedBytes) {
        this(phase, order, records, durationNs, foreignCores, allocatedBytes, null);
    }
}
