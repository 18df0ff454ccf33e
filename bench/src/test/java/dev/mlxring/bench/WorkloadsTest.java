package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The workloads: seeded and reproducible, lengths in range, and files that cannot be used refused by file and line. */
class WorkloadsTest {
    @TempDir
    Path dir;

    private static Workloads.Params params(int n) {
        return new Workloads.Params(new LengthRange(40, 60), new LengthRange(8, 16), n, 3, 42);
    }

    private Path file(String name, String text) throws IOException {
        Path f = dir.resolve(name);
        Files.writeString(f, text, StandardCharsets.UTF_8);
        return f;
    }

    @Test
    void randomIsReproducibleWithinTheRangesAndUniquePerRequest() {
        List<BenchPrompt> a = Workloads.load("random", params(20));
        assertEquals(a, Workloads.load("random", params(20)), "same seed, same prompts");
        assertNotEquals(
                a,
                Workloads.load(
                        "random", new Workloads.Params(new LengthRange(40, 60), new LengthRange(8, 16), 20, 3, 43)));
        Set<String> distinct = new HashSet<>();
        for (BenchPrompt p : a) {
            assertNull(p.system());
            assertTrue(p.maxTokens() >= 8 && p.maxTokens() <= 16, "output " + p.maxTokens());
            assertTrue(p.approxInputTokens() >= 40 && p.approxInputTokens() <= 60);
            int words = p.user().split("\\s+").length;
            assertTrue(Math.abs(words - p.approxInputTokens()) <= 4, words + " words for " + p.approxInputTokens());
            distinct.add(p.user());
        }
        assertEquals(20, distinct.size());
    }

    @Test
    void prefixSharedCyclesItsSystemPromptsAndAgentEditItsFiles() {
        List<BenchPrompt> shared = Workloads.load("prefix-shared", params(7));
        assertEquals(3, shared.stream().map(BenchPrompt::system).distinct().count());
        assertEquals(shared.get(0).system(), shared.get(3).system());
        assertEquals(7, shared.stream().map(BenchPrompt::user).distinct().count());
        List<BenchPrompt> edit = Workloads.load("agent-edit", params(6));
        assertTrue(edit.get(0).user().startsWith("# file module_0.py"));
        assertTrue(edit.get(3).user().startsWith("# file module_0.py"));
        assertTrue(edit.get(1).user().startsWith("# file module_1.py"));
        assertTrue(edit.get(0).user().contains("Edit 0: rename f_"));
    }

    @Test
    void jsonlAndSharegptFilesLoad() throws IOException {
        Path jsonl = file("p.jsonl", """
                {"prompt": "hello there"}

                {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}], "max_tokens": 5}
                """);
        List<BenchPrompt> p = Workloads.load("jsonl:" + jsonl, params(4));
        assertEquals(4, p.size(), "cycled to --num-prompts");
        assertTrue(p.contains(new BenchPrompt("be brief", "hi", 5, 1)), p.toString());
        Path array = file("sg.json", """
                [
                  {"id": "a", "conversations": [{"from": "human", "value": "q one"}, {"from": "gpt", "value": "a"}]},
                  {"id": "b", "conversations": [{"from": "system", "value": "sys"}, {"from": "human", "value": "q two"}]}
                ]
                """);
        List<BenchPrompt> s = Workloads.load("sharegpt:" + array, params(2));
        assertEquals(
                Set.of("q one", "q two"),
                Set.copyOf(s.stream().map(BenchPrompt::user).toList()));
        Path lines = file("sg.jsonl", "{\"conversations\": [{\"role\": \"user\", \"content\": \"q three\"}]}\n");
        assertEquals(
                "q three", Workloads.load("sharegpt:" + lines, params(1)).get(0).user());
    }

    private void refused(String spec, String... parts) {
        DatasetException e = assertThrows(DatasetException.class, () -> Workloads.load(spec, params(2)), spec);
        for (String part : parts) {
            assertTrue(e.getMessage().contains(part), e.getMessage() + " lacks " + part);
        }
    }

    @Test
    void badFilesAreRefusedNamingFileAndLine() throws IOException {
        refused("jsonl:" + dir.resolve("missing.jsonl"), "missing.jsonl: no such file");
        Path notJson = file("bad.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": \n");
        refused("jsonl:" + notJson, notJson + ":2: not valid JSON");
        refused("jsonl:" + file("arr.jsonl", "[1, 2]\n"), "arr.jsonl:1: each line must be a JSON object");
        refused(
                "jsonl:" + file("unk.jsonl", "{\"prompt\": \"a\"}\n\n{\"prompt\": \"b\", \"temp\": 1}\n"),
                "unk.jsonl:3: unknown field \"temp\"");
        refused(
                "jsonl:" + file("both.jsonl", "{\"prompt\": \"a\", \"messages\": []}\n"),
                "both.jsonl:1: a line needs exactly one");
        refused("jsonl:" + file("mt.jsonl", "{\"prompt\": \"a\", \"max_tokens\": 0}\n"), "mt.jsonl:1: \"max_tokens\"");
        refused(
                "jsonl:" + file("roles.jsonl", "{\"messages\": [{\"role\": \"assistant\", \"content\": \"a\"}]}\n"),
                "roles.jsonl:1:",
                "role assistant");
        refused("jsonl:" + file("empty.jsonl", "\n\n"), "empty.jsonl: holds no prompts");
        refused(
                "sharegpt:"
                        + file(
                                "nohuman.json",
                                "[\n {\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}]},\n"
                                        + " {\"conversations\": [{\"from\": \"gpt\", \"value\": \"a\"}]}\n]\n"),
                "nohuman.json:3: a conversation without a human turn");
        refused("sharegpt:" + file("noconv.json", "[{\"x\": 1}]"), "noconv.json:1: an entry needs a \"conversations\"");
        refused("sharegpt:" + file("trunc.json", "[{\"conversations\": ["), "trunc.json:1: not valid JSON");
        Path latin1 = dir.resolve("latin1.jsonl");
        Files.write(latin1, new byte[] {'{', '"', 'p', 'r', 'o', 'm', 'p', 't', '"', ':', '"', (byte) 0xE9, '"', '}'});
        refused("jsonl:" + latin1, "latin1.jsonl");
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Workloads.load("poems", params(1)));
        assertTrue(e.getMessage().contains("--workload must be one of random, prefix-shared"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Workloads.load("jsonl:", params(1)));
    }

    @Test
    void lengthRangesParseOrNameTheFlag() {
        assertEquals(new LengthRange(128, 128), LengthRange.parse("--input-len", "128"));
        assertEquals(new LengthRange(64, 256), LengthRange.parse("--input-len", "64:256"));
        for (String bad : List.of("0", "9:3", "a", "1:2:3", "-4")) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> LengthRange.parse("--output-len", bad), bad);
            assertTrue(e.getMessage().startsWith("--output-len"), e.getMessage());
        }
    }
}
