package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.URI;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The fair order: one target at a time, reversed at every level step, across rounds. */
class PhasePlanTest {
    private static Target t(String name) {
        return new Target(name, URI.create("http://127.0.0.1:1"), Map.of(), null);
    }

    private static String order(List<PhasePlan.Phase> plan) {
        StringBuilder sb = new StringBuilder();
        for (PhasePlan.Phase p : plan) {
            sb.append(p.round())
                    .append(p.level().label())
                    .append(p.target().name())
                    .append(' ');
        }
        return sb.toString().trim();
    }

    @Test
    void targetsAlternateAbbaLevelByLevelAndAcrossRounds() {
        List<LoadLevel> levels =
                List.of(new LoadLevel.Concurrency(1), new LoadLevel.Concurrency(4), new LoadLevel.Concurrency(8));
        assertEquals(
                "11A 11B 14B 14A 18A 18B 21B 21A 24A 24B 28B 28A",
                order(PhasePlan.of(List.of(t("A"), t("B")), levels, 2)));
        assertEquals(
                "11A 11B 11C 14C 14B 14A",
                order(PhasePlan.of(List.of(t("A"), t("B"), t("C")), levels.subList(0, 2), 1)));
        assertEquals("11A 14A 18A", order(PhasePlan.of(List.of(t("A")), levels, 1)));
    }

    @Test
    void everyTargetRunsEveryLevelOncePerRound() {
        List<LoadLevel> levels = List.of(new LoadLevel.Rate(1, 1), new LoadLevel.Rate(2, 1));
        List<PhasePlan.Phase> plan = PhasePlan.of(List.of(t("A"), t("B")), levels, 3);
        assertEquals(12, plan.size());
        for (int round = 1; round <= 3; round++) {
            for (int l = 0; l < 2; l++) {
                for (String name : List.of("A", "B")) {
                    int r = round;
                    int level = l;
                    assertEquals(
                            1,
                            plan.stream()
                                    .filter(p -> p.round() == r
                                            && p.levelIndex() == level
                                            && p.target().name().equals(name))
                                    .count());
                }
            }
        }
    }
}
