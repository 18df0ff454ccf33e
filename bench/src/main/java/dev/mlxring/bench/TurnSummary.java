package dev.mlxring.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntPredicate;

/**
 * A multi-turn run's TTFT by turn: what a prompt cache buys a conversation. Turn 1 prefills the
 * whole first message; a later turn's prompt repeats everything before it (the earlier messages
 * and the server's answers) and adds a short follow-up, so a server that reuses the cached prefix
 * answers later turns about as fast as a short prompt, one that does not prefills the growing
 * history every time. Three entries, each over the completed requests of those turns with
 * {@code completed}, {@code mean_ttft_ms}, {@code median_ttft_ms}, {@code p90_ttft_ms},
 * {@code p99_ttft_ms} and {@code mean_prompt_tokens} (the usage's prompt tokens; null where no
 * server reported any): {@code ttft_first_turn}, {@code ttft_later_turns} (turns 2 and on, pooled)
 * and {@code ttft_by_turn} (one entry per turn, with {@code turn}).
 */
public final class TurnSummary {
    private TurnSummary() {}

    /** The per-turn TTFT of {@code records}, each request's turn read from {@code prompts} at its index. */
    public static Map<String, Object> of(List<RequestRecord> records, List<BenchPrompt> prompts) {
        int turns = prompts.stream().mapToInt(BenchPrompt::turn).max().orElse(1);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ttft_first_turn", stats(records, prompts, t -> t == 1));
        m.put("ttft_later_turns", stats(records, prompts, t -> t > 1));
        List<Map<String, Object>> byTurn = new ArrayList<>();
        for (int turn = 1; turn <= turns; turn++) {
            int want = turn;
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("turn", turn);
            row.putAll(stats(records, prompts, t -> t == want));
            byTurn.add(row);
        }
        m.put("ttft_by_turn", byTurn);
        return m;
    }

    private static Map<String, Object> stats(
            List<RequestRecord> records, List<BenchPrompt> prompts, IntPredicate turn) {
        List<RequestRecord> mine = records.stream()
                .filter(r -> r.ok() && turn.test(prompts.get(r.index()).turn()))
                .toList();
        Distribution ttft =
                Distribution.of(mine.stream().mapToDouble(RequestRecord::ttftMs).toArray());
        Distribution promptTokens = Distribution.of(mine.stream()
                .mapToDouble(r -> r.promptTokens() >= 0 ? r.promptTokens() : Double.NaN)
                .toArray());
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("completed", mine.size());
        m.put("mean_ttft_ms", ttft.mean());
        m.put("median_ttft_ms", ttft.median());
        m.put("p90_ttft_ms", ttft.percentile(90));
        m.put("p99_ttft_ms", ttft.percentile(99));
        m.put("mean_prompt_tokens", promptTokens.mean());
        return m;
    }
}
