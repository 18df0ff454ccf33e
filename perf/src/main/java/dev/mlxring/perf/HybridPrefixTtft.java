package dev.mlxring.perf;

import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationRun;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.prefix.KvSnapshots;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.prefix.PrefixedRun;
import dev.mlxring.kvstore.KvSnapshot;
import dev.mlxring.kvstore.PrefixCache;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.kvstore.TieredPrefixCache;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * TTFT of a hybrid model's second agent turn with its prefix restored against recomputed, in
 * process (no server): turn 1 ({@code --tokens} random ids) runs through {@link PrefixedRun} into
 * a prefix cache with an SSD tier, generating {@code --gen} greedy tokens; turn 2 is turn 1, its
 * output and {@code --new} more ids. Each round measures turn 2's time from
 * {@link PrefixedRun#open} to its first token three ways, in an order that alternates by round:
 * restored from RAM, restored from the SSD tier after a restart (a new cache on the same
 * directory, RAM empty), and recomputed (no cache). Also prints the snapshot's bytes: KV, the
 * recurrent state per boundary, and the checkpoints turn 1 took.
 *
 * <pre>
 * java ... dev.mlxring.perf.HybridPrefixTtft --model DIR [--tokens 3900] [--gen 32] [--new 64]
 *     [--rounds 3] [--prefill-step 2048] [--checkpoint 2048]
 * </pre>
 */
public final class HybridPrefixTtft {
    private HybridPrefixTtft() {}

    private record Args(Path model, int tokens, int gen, int fresh, int rounds, int prefillStep, int checkpoint) {}

    public static void main(String[] argv) throws Exception {
        Args a = Flags.parseOrExit(
                argv,
                HybridPrefixTtft::parse,
                "HybridPrefixTtft --model DIR [--tokens N] [--gen N] [--new N] [--rounds K] [--prefill-step N]"
                        + " [--checkpoint N]");
        try (LanguageModel model = Models.load(a.model())) {
            SplittableRandom random = new SplittableRandom(42);
            int vocab = model.vocabSize();
            List<double[]> rows = new ArrayList<>();
            for (int round = 0; round < a.rounds(); round++) {
                int[] turn1 = random.ints(a.tokens(), 0, vocab).toArray();
                Path dir = Files.createTempDirectory("mlxring-hybrid-ttft-");
                int[] turn2;
                long[] bytes;
                TieredPrefixCache cache =
                        new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, 4_000_000_000L);
                try {
                    PrefixReuse reuse = new PrefixReuse(cache, "bench", "", a.checkpoint());
                    int[] out = new int[a.gen()];
                    bytes = turnOne(model, reuse, turn1, a, out);
                    cache.flushSpills();
                    turn2 = Arrays.copyOf(turn1, turn1.length + out.length + a.fresh());
                    System.arraycopy(out, 0, turn2, turn1.length, out.length);
                    int[] more = random.ints(a.fresh(), 0, vocab).toArray();
                    System.arraycopy(more, 0, turn2, turn1.length + out.length, more.length);
                } catch (RuntimeException e) {
                    cache.close();
                    throw e;
                }
                rows.add(measure(model, cache, dir, turn2, a, round % 2 == 0));
                double[] r = rows.getLast();
                System.out.printf(
                        Locale.ROOT,
                        "round %d (%s first): turn 2 of %d tokens: TTFT restored from RAM %.0f ms (%d cached),"
                                + " from SSD %.0f ms (%d cached), recomputed %.0f ms; RAM/recompute %.3f, SSD/recompute"
                                + " %.3f%n",
                        round,
                        round % 2 == 0 ? "restore" : "recompute",
                        turn2.length,
                        r[0],
                        (int) r[3],
                        r[1],
                        (int) r[4],
                        r[2],
                        r[0] / r[2],
                        r[1] / r[2]);
                if (round == 0) {
                    System.out.printf(
                            Locale.ROOT,
                            "snapshot of turn 1 (%d positions): %.2f MB in all = KV %.2f MB + recurrent state %.3f MB"
                                    + " per boundary x %d boundaries (%d checkpoints + its end)%n",
                            bytes[3],
                            bytes[0] / 1e6,
                            bytes[1] / 1e6,
                            bytes[2] / 1e6,
                            bytes[4] + 1,
                            bytes[4]);
                }
                Mlx.clearCache();
            }
            double[] med = new double[3];
            for (int k = 0; k < 3; k++) {
                int kk = k;
                double[] v = rows.stream().mapToDouble(r -> r[kk]).sorted().toArray();
                med[k] = v[v.length / 2];
            }
            System.out.printf(
                    Locale.ROOT,
                    "median of %d rounds: restored from RAM %.0f ms, from SSD %.0f ms, recomputed %.0f ms;"
                            + " RAM/recompute %.3f, SSD/recompute %.3f%n",
                    rows.size(),
                    med[0],
                    med[1],
                    med[2],
                    med[0] / med[2],
                    med[1] / med[2]);
        }
    }

    /** Runs turn 1, fills {@code out} with its tokens; returns the snapshot's bytes: all, KV, recurrent per boundary, positions, checkpoints. */
    private static long[] turnOne(LanguageModel model, PrefixReuse reuse, int[] prompt, Args a, int[] out) {
        long[] bytes = new long[5];
        try (PrefixedRun pr =
                PrefixedRun.open(reuse, model, prompt, options(a, out.length), SamplingParams.GREEDY, null)) {
            GenerationRun run = pr.run();
            int n = 0;
            GenerationRun.Event e;
            while ((e = run.advance()) != GenerationRun.Event.FINISHED) {
                if (e == GenerationRun.Event.TOKEN) {
                    out[n++] = run.token();
                }
            }
            KvSnapshot whole = KvSnapshots.capture(run.caches());
            KvSnapshot recurrent = KvSnapshots.checkpoint(run.caches());
            int checkpoints = pr.checkpointPositions().length;
            bytes[1] = whole.nbytes() - recurrent.nbytes();
            bytes[2] = recurrent.nbytes();
            bytes[0] = bytes[1] + (checkpoints + 1) * bytes[2];
            bytes[3] = whole.tokens();
            bytes[4] = checkpoints;
            whole.release();
            recurrent.release();
        }
        return bytes;
    }

    /**
     * {restored RAM ms, restored SSD ms, recomputed ms, RAM cached, SSD cached}; closes {@code ram}
     * (the restart before the SSD restore).
     */
    private static double[] measure(
            LanguageModel model, PrefixCache ram, Path dir, int[] turn2, Args a, boolean restoreFirst) {
        double[] r = new double[5];
        if (!restoreFirst) {
            r[2] = ttft(model, null, turn2, a)[0];
        }
        double[] hit = ttft(model, new PrefixReuse(ram, "bench", "", a.checkpoint()), turn2, a);
        r[0] = hit[0];
        r[3] = hit[1];
        ram.close();
        try (TieredPrefixCache disk = new TieredPrefixCache(new RamPrefixCache(0, 0), dir, 4_000_000_000L)) {
            double[] d = ttft(model, new PrefixReuse(disk, "bench", "", a.checkpoint()), turn2, a);
            r[1] = d[0];
            r[4] = d[1];
        }
        if (restoreFirst) {
            r[2] = ttft(model, null, turn2, a)[0];
        }
        return r;
    }

    /** {ms from open to the first token, cached positions}. */
    private static double[] ttft(LanguageModel model, PrefixReuse reuse, int[] prompt, Args a) {
        Mlx.clearCache();
        long t0 = System.nanoTime();
        try (PrefixedRun pr = PrefixedRun.open(reuse, model, prompt, options(a, 1), SamplingParams.GREEDY, null)) {
            GenerationRun run = pr.run();
            while (run.advance() != GenerationRun.Event.TOKEN) {
                // prefill until the first token
            }
            return new double[] {(System.nanoTime() - t0) / 1e6, pr.cachedTokens()};
        }
    }

    private static GenerationOptions options(Args a, int maxTokens) {
        return new GenerationOptions(maxTokens, a.prefillStep(), new int[0], false, null);
    }

    private static Args parse(String[] argv) {
        Path model = null;
        int tokens = 3900;
        int gen = 32;
        int fresh = 64;
        int rounds = 3;
        int prefillStep = 2048;
        int checkpoint = PrefixReuse.DEFAULT_CHECKPOINT_TOKENS;
        Flags f = new Flags(argv);
        while (f.next()) {
            switch (f.flag()) {
                case "--model" -> model = Path.of(f.value());
                case "--tokens" -> tokens = f.positive();
                case "--gen" -> gen = f.positive();
                case "--new" -> fresh = f.positive();
                case "--rounds" -> rounds = f.positive();
                case "--prefill-step" -> prefillStep = f.positive();
                case "--checkpoint" -> checkpoint = f.nonNegative();
                default -> throw f.unknown();
            }
        }
        if (model == null) {
            throw new IllegalArgumentException("--model is required");
        }
        return new Args(model, tokens, gen, fresh, rounds, prefillStep, checkpoint);
    }
}
