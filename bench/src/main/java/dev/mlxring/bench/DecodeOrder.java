package dev.mlxring.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The order in which {@code bench decode} runs its engines: round after round, every engine once a
 * round, one at a time, the order reversed every other round (A B C | C B A | A B C …), so a
 * drifting machine lands on every engine alike.
 */
public final class DecodeOrder {
    /** One run: {@code engine} in {@code round} (from 1). */
    public record Slot(int round, String engine) {}

    private DecodeOrder() {}

    public static List<Slot> of(List<String> engines, int rounds) {
        if (engines.isEmpty() || rounds < 1) {
            throw new IllegalArgumentException("an order needs an engine and a round");
        }
        List<Slot> out = new ArrayList<>();
        for (int round = 1; round <= rounds; round++) {
            List<String> order = new ArrayList<>(engines);
            if (round % 2 == 0) {
                Collections.reverse(order);
            }
            for (String e : order) {
                out.add(new Slot(round, e));
            }
        }
        return out;
    }
}
