package dev.mlxring.sink;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.management.ThreadMXBean;
import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.TextSink;
import dev.mlxring.tokenizer.HfTokenizer;
import java.lang.management.ManagementFactory;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The per-token path (byte-level detokenizer with multi-byte and 4-byte characters, text rules with
 * a stop string and think markers) allocates nothing in steady state.
 */
class DetokenizingSinkAllocationTest {

    @Test
    void steadyStateAllocatesNothingPerToken() {
        try (HfTokenizer tok = Oracle.load(Oracle.defaultModel())) {
            DetokenizingSinks sinks = DetokenizingSinks.builder(tok)
                    .thinkMarkers(new ThinkMarkers("<think>", "</think>", null, null))
                    .build();
            int[] ids = tok.encode("Some text, 日本語 and 😀 emoji; code() { x += 1; }\n<think>hm</think> done. ", false);
            TextSink sink = sinks.open(SinkRun.plan(new int[0], List.of("NEVER-MATCHES")));
            CommittedSpan span = new CommittedSpan(0);
            int rounds = 20_000;
            long chars = 0;
            ThreadMXBean mx = (ThreadMXBean) ManagementFactory.getThreadMXBean();
            long before = 0;
            for (int r = 0; r < rounds; r++) {
                if (r == rounds / 2) {
                    before = mx.getCurrentThreadAllocatedBytes();
                }
                for (int id : ids) {
                    span.clear();
                    assertFalse(sink.onToken(id, span));
                    chars += span.text.length() + span.reasoning.length();
                }
            }
            long allocated = mx.getCurrentThreadAllocatedBytes() - before;
            long tokens = (long) ids.length * (rounds - rounds / 2);
            assertTrue(chars > 0);
            assertTrue(allocated < tokens / 100, "allocated " + allocated + " bytes for " + tokens + " tokens");
        }
    }
}
