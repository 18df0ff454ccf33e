package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.batch.BatchGenerator;
import dev.mlxring.exec.batch.BatchRequest;
import dev.mlxring.exec.batch.BatchToken;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.nn.AdapterCache;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.mlx.PythonScript;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Many named adapters in one batch, against live mlx-lm: each row of one {@link BatchGenerator}
 * run names its own adapter (or none), and its bytes (every step's token and logprobs sha) must
 * equal mlx-lm's {@code BatchGenerator} run over the same script with that row's adapter loaded
 * on the whole batch (the oracle runs the script once per adapter and once without, and each row
 * keeps the run of its adapter). The rows have no stop tokens, so every run has the same batch
 * composition at every step. Each cell also checks that its adapters change their rows (a row
 * served the base model's bytes would otherwise pass against a broken oracle).
 */
class MixedAdapterBatchParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Path work;

    /**
     * An adapter of a cell: its mlx_lm.lora type, the last {@code numLayers} blocks it converts (0:
     * all), rank, scale, seed and {@code keys} (the projections it converts; null: every one).
     */
    record Adapter(String name, String type, int numLayers, int rank, double scale, int seed, String keys) {}

    /**
     * A cell: a model, its adapters, and per script row the adapter it names (an index into
     * {@code adapters}, -1 for none).
     */
    record Cell(String name, String model, List<Adapter> adapters, BatchParityTest.Cell batch, int[] rowAdapter) {
        @Override
        public String toString() {
            return name;
        }
    }

    @BeforeAll
    static void buildOracleModels() throws Exception {
        work = OracleFixtures.build().work();
        BatchParityTest.useWork(work);
    }

    static Stream<Cell> cells() {
        List<Adapter> adapters = List.of(
                new Adapter("a", "lora", 0, 8, 20.0, 11, null),
                new Adapter("b", "lora", 2, 8, 16.0, 12, null),
                new Adapter("c", "dora", 1, 4, 10.0, 13, null));
        Map<String, Object> seeded = Map.of("temp", 0.8, "top_k", 20, "seed", 3);
        List<Cell> cells = new ArrayList<>();
        for (String model : List.of("llama-f32", "qwen3-q4")) {
            List<BatchParityTest.ScriptRow> rows = List.of(
                    BatchParityTest.greedy(0, 12, 1, 14),
                    BatchParityTest.greedy(0, 5, 2, 12),
                    BatchParityTest.restored(0, 9, 3, 12, 0, seeded),
                    BatchParityTest.greedy(1, 20, 4, 10),
                    BatchParityTest.greedy(2, 7, 5, 10),
                    BatchParityTest.restored(3, 30, 6, 8, 0, Map.of("temp", 0.9, "top_p", 0.9, "seed", 5)));
            BatchParityTest.Cell batch = new BatchParityTest.Cell("mixed-adapters-" + model, model, 16, 8, 32, rows);
            cells.add(new Cell("mixed-" + model, model, adapters, batch, new int[] {0, 1, 2, -1, 0, 2}));
        }
        // LoRA adapters only, on a 4-bit base: every block runs the exact fused block, each row's
        // deltas added inside it (a DoRA row among them sends its blocks to the graph, above)
        List<Adapter> lora = List.of(
                new Adapter("a", "lora", 0, 8, 20.0, 11, null),
                new Adapter("b", "lora", 2, 8, 16.0, 12, null),
                new Adapter("q", "lora", 1, 4, 16.0, 14, "self_attn.q_proj,mlp.down_proj"));
        List<BatchParityTest.ScriptRow> loraRows = List.of(
                BatchParityTest.greedy(0, 12, 1, 14),
                BatchParityTest.greedy(0, 5, 2, 12),
                BatchParityTest.restored(0, 9, 3, 12, 0, seeded),
                BatchParityTest.greedy(1, 20, 4, 10),
                BatchParityTest.greedy(2, 7, 5, 10));
        cells.add(new Cell(
                "lora-only-qwen3-q4",
                "qwen3-q4",
                lora,
                new BatchParityTest.Cell("lora-only-qwen3-q4", "qwen3-q4", 16, 8, 32, loraRows),
                new int[] {0, 1, -1, 2, 0}));
        // Adapters over fewer blocks than the model's two: the blocks they do not convert run the
        // fused block for a lone row (solo caches, the exact tier's fused path) and the graph in
        // the batch. A lone row on one adapter reads its prompt and decodes alone, then rows on
        // the others and on none join it.
        List<Adapter> partial = List.of(
                new Adapter("p", "lora", 1, 8, 20.0, 21, null),
                new Adapter("k", "lora", 1, 4, 16.0, 22, "self_attn.q_proj,mlp.down_proj"),
                new Adapter("e", "dora", 1, 4, 10.0, 23, null));
        for (int lone = 0; lone < 2; lone++) {
            String model = "qwen3-q4";
            String name = "partial-lone-" + partial.get(lone).name() + "-" + model;
            List<BatchParityTest.ScriptRow> rows = List.of(
                    BatchParityTest.greedy(0, 12, 1, 16),
                    BatchParityTest.greedy(5, 7, 2, 10),
                    BatchParityTest.restored(5, 9, 3, 10, 0, seeded),
                    BatchParityTest.greedy(7, 20, 4, 8));
            BatchParityTest.Cell batch = new BatchParityTest.Cell(name, model, 16, 8, 32, rows);
            int[] rowAdapter = lone == 0 ? new int[] {0, 1, 2, -1} : new int[] {1, 0, -1, 2};
            cells.add(new Cell(name, model, partial, batch, rowAdapter));
        }
        String only = System.getProperty("adapter.cells");
        return only == null || only.isBlank()
                ? cells.stream()
                : cells.stream().filter(c -> c.name().matches(only));
    }

    private static Path adapterDir(Cell cell, Adapter a) throws Exception {
        List<String> flags = new ArrayList<>(List.of(
                "--rank",
                String.valueOf(a.rank()),
                "--scale",
                String.valueOf(a.scale()),
                "--seed",
                String.valueOf(a.seed())));
        if (a.keys() != null) {
            flags.addAll(List.of("--keys", a.keys()));
        }
        return OracleAdapters.write(
                work.resolve("models").resolve(cell.model()),
                work.resolve("adapters").resolve(cell.model() + "-mixed-" + a.name()),
                a.type(),
                a.numLayers(),
                flags.toArray(String[]::new));
    }

    /** batch.py's run of the script with {@code adapter} on the whole batch (null: none). */
    private static JsonNode oracle(Cell cell, Path script, Path adapter, String tag) throws Exception {
        Path out = script.resolveSibling("expected-" + cell.batch().name() + "-" + tag + ".json");
        List<String> args = new ArrayList<>(List.of(
                "--model",
                work.resolve("models").resolve(cell.model()).toString(),
                "--script",
                script.toString(),
                "--out",
                out.toString()));
        if (adapter != null) {
            args.addAll(List.of("--adapter", adapter.toString()));
        }
        PythonScript.run("oracle/batch.py", 900, args);
        return JSON.readTree(out.toFile());
    }

    @ParameterizedTest(name = "{0}", allowZeroInvocations = true)
    @MethodSource("cells")
    void eachRowMatchesTheBatchRunWithItsAdapter(Cell cell) throws Exception {
        Map<String, Path> dirs = new LinkedHashMap<>();
        for (Adapter a : cell.adapters()) {
            dirs.put(a.name(), adapterDir(cell, a));
        }
        Path script = BatchParityTest.writeScript(cell.batch());
        JsonNode base = oracle(cell, script, null, "base");
        List<List<String>> plain = BatchParityTest.steps(base);
        List<List<List<String>>> runs = new ArrayList<>();
        for (Adapter a : cell.adapters()) {
            List<List<String>> run = BatchParityTest.steps(oracle(cell, script, dirs.get(a.name()), a.name()));
            assertEquals(shape(plain), shape(run), cell + ": adapter " + a.name() + " changed the batch composition");
            runs.add(run);
        }
        // the uid of script row i is uids[i]; a row keeps the run of its own adapter
        int[] uids = JSON.convertValue(base.get("uids"), int[].class);
        Map<Integer, Integer> adapterOfUid = new HashMap<>();
        for (int i = 0; i < uids.length; i++) {
            adapterOfUid.put(uids[i], cell.rowAdapter()[i]);
        }
        List<List<String>> expected = new ArrayList<>();
        for (int s = 0; s < plain.size(); s++) {
            List<String> step = new ArrayList<>();
            for (int e = 0; e < plain.get(s).size(); e++) {
                int uid = Integer.parseInt(plain.get(s).get(e).split(":")[0]);
                int k = adapterOfUid.get(uid);
                step.add(k < 0 ? plain.get(s).get(e) : runs.get(k).get(s).get(e));
            }
            expected.add(step);
        }
        List<List<String>> got;
        try (LanguageModel model = Models.load(
                        work.resolve("models").resolve(cell.model()),
                        CpuKernels.DEFAULT,
                        Numerics.EXACT,
                        false,
                        null,
                        null,
                        true);
                AdapterCache adapters = new AdapterCache(model.adapterSlots(), dirs, Long.MAX_VALUE)) {
            got = run(model, adapters, cell);
            for (Adapter a : cell.adapters()) {
                assertEquals(1, adapters.loads(a.name()), a.name() + " was loaded once");
            }
        }
        assertEquals(
                expected, got, cell + ": every row's steps (uid:token:finish:sha) against its adapter's batch run");
        for (int k = 0; k < cell.adapters().size(); k++) {
            assertFalse(runs.get(k).equals(plain), cell + ": adapter " + k + " left the base model's batch unchanged");
        }
    }

    private static List<Integer> shape(List<List<String>> steps) {
        return steps.stream().map(List::size).toList();
    }

    /** The script through our generator, each row leasing its adapter. */
    private static List<List<String>> run(LanguageModel model, AdapterCache adapters, Cell cell) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        BatchParityTest.Cell batch = cell.batch();
        List<List<String>> steps = new ArrayList<>();
        int total = batch.rows().size();
        int inserted = 0;
        int finished = 0;
        int loneSteps = 0;
        try (BatchGenerator gen = new BatchGenerator(
                model, batch.prefillStep(), batch.prefillBatch(), batch.completionBatch(), null, 0, false)) {
            for (int step = 0; ; step++) {
                for (int i = 0; i < total; i++) {
                    BatchParityTest.ScriptRow r = batch.rows().get(i);
                    if (r.at() == step) {
                        int k = cell.rowAdapter()[i];
                        gen.insert(
                                new BatchRequest(
                                        r.prompt(),
                                        null,
                                        r.maxTokens(),
                                        BatchParityTest.params(r.sampling()),
                                        r.stop(),
                                        null,
                                        null,
                                        null,
                                        k < 0
                                                ? null
                                                : adapters.lease(
                                                        cell.adapters().get(k).name())),
                                null,
                                new int[0]);
                        inserted++;
                    }
                }
                if (inserted == total && finished == total) {
                    assertTrue(gen.idle(), "every row finished but the generator is not idle");
                    boolean lone =
                            batch.rows().stream().filter(r -> r.at() == 0).count() == 1;
                    assertTrue(!lone || loneSteps > 0, cell + ": the lone row never decoded alone");
                    return steps;
                }
                assertFalse(step > 10_000, "the script does not finish");
                if (inserted == 1 && gen.generating() == 1) {
                    // a row alone from the start decodes on solo caches, where blocks fuse
                    assertTrue(gen.soloGeneration(), cell + ": the lone row is not on solo caches");
                    loneSteps++;
                }
                List<String> s = new ArrayList<>();
                for (BatchToken t : gen.next(true)) {
                    s.add(t.uid() + ":" + t.token() + ":" + (t.finishReason() == null ? "-" : t.finishReason()) + ":"
                            + HexFormat.of().formatHex(sha.digest(t.logprobs().toBytes())));
                    if (t.finishReason() != null) {
                        finished++;
                    }
                }
                steps.add(s);
            }
        }
    }
}
