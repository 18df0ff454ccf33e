package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.pipeline.Usage;

/**
 * {@code usage.speculative: {"proposed": n, "accepted": m}} in the three APIs' usage objects, only
 * for a request that ran speculatively (proposed tokens the model verified, and those it accepted).
 */
public final class SpeculativeUsage {
    private SpeculativeUsage() {}

    /** Adds {@code speculative} to {@code u} when {@code usage} has it. */
    public static void put(ObjectNode u, Usage usage) {
        Usage.Speculative s = usage.speculative();
        if (s != null) {
            u.putObject("speculative").put("proposed", s.proposed()).put("accepted", s.accepted());
        }
    }
}
