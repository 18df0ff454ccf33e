package dev.mlxring.constraint;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * One tokenizer shared by threads that compile and match at once (the canonical-tokenizer upcall
 * then runs on each of them), and a matcher handed from thread to thread between steps: every
 * mask is the one a single thread computes.
 */
class ConstraintThreadsTest {
    private static final int THREADS = 4;

    @Test
    void compilingAndMatchingOnSeveralThreadsGivesTheSingleThreadMasks() throws Exception {
        List<ConstraintCases> cases = ConstraintCases.all();
        List<List<String>> serial = new ArrayList<>();
        for (ConstraintCases c : cases) {
            serial.add(masks(c, null));
        }
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            List<Future<List<String>>> parallel = new ArrayList<>();
            for (int round = 0; round < THREADS; round++) {
                for (ConstraintCases c : cases) {
                    parallel.add(pool.submit(() -> masks(c, null)));
                }
            }
            for (int i = 0; i < parallel.size(); i++) {
                assertEquals(serial.get(i % cases.size()), parallel.get(i).get(), cases.get(i % cases.size()) + "");
            }
            for (int i = 0; i < cases.size(); i++) { // each step's mask on whichever pool thread runs it
                assertEquals(serial.get(i), masks(cases.get(i), pool), cases.get(i) + " handed between threads");
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** The masks along the case's valid text: on this thread, or each step as a task on {@code pool}. */
    private static List<String> masks(ConstraintCases c, ExecutorService pool) throws Exception {
        List<String> out = new ArrayList<>();
        int[] tokens = DefaultModel.encode(c.validText());
        try (CompiledConstraint constraint =
                        CompiledConstraint.compile(DefaultModel.tokenizer(), c.kind(), c.source());
                ConstraintMatcher matcher = constraint.newMatcher();
                Arena arena = Arena.ofShared()) {
            MemorySegment mask = arena.allocate(matcher.maskByteSize(), Integer.BYTES);
            for (int step = 0; step <= tokens.length; step++) {
                int token = step < tokens.length ? tokens[step] : -1;
                Runnable work = () -> {
                    matcher.computeMask(mask);
                    out.add(HexFormat.of().formatHex(mask.toArray(ValueLayout.JAVA_BYTE)));
                    if (token >= 0) {
                        matcher.consume(token);
                    }
                };
                if (pool == null) {
                    work.run();
                } else {
                    pool.submit(work).get(); // Future.get: the hand-off's happens-before edge
                }
            }
        }
        return out;
    }
}
