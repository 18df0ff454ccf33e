package dev.mlxring.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * The order in which a run loads its targets: one target at a time, level after level, round
 * after round, the targets' order reversed at every step (ABBA: A B | B A | A B …), so a drift of
 * the machine (a warming cache, a throttling CPU, a neighbour starting) lands on every target
 * alike instead of always on the one that runs second. The step counter runs across rounds, so
 * with an odd number of levels round two starts where round one left off.
 */
public final class PhasePlan {
    /** One phase: {@code target} under {@code level} (its index in the run's levels) in {@code round} (from 1). */
    public record Phase(int round, int levelIndex, LoadLevel level, Target target) {}

    private PhasePlan() {}

    /** Every phase of a run over {@code targets} × {@code levels} × {@code rounds}, in the order to run them. */
    public static List<Phase> of(List<Target> targets, List<LoadLevel> levels, int rounds) {
        if (targets.isEmpty() || levels.isEmpty() || rounds < 1) {
            throw new IllegalArgumentException("a plan needs a target, a level and a round");
        }
        List<Phase> out = new ArrayList<>();
        int step = 0;
        for (int round = 1; round <= rounds; round++) {
            for (int l = 0; l < levels.size(); l++, step++) {
                List<Target> order = new ArrayList<>(targets);
                if (step % 2 == 1) {
                    java.util.Collections.reverse(order);
                }
                for (Target t : order) {
                    out.add(new Phase(round, l, levels.get(l), t));
                }
            }
        }
        return out;
    }
}
