package dev.mlxring.bench;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * The workloads of {@code --workload}, each a list of {@link BenchPrompt}s made from a seed, so
 * every target gets the same requests in the same order:
 *
 * <ul>
 *   <li>{@code random}: a prompt of about {@code --input-len} words drawn from a vocabulary of
 *       common short English words (one token each on the usual BPE vocabularies; the usage's
 *       prompt tokens give the exact count) behind a tag unique to the request, so no prompt
 *       cache can reuse a whole earlier prompt;
 *   <li>{@code prefix-shared}: {@code --prefix-count} system prompts of about {@code --input-len}
 *       words each, the requests taking them in turn with a short question each: what a prompt
 *       cache serves;
 *   <li>{@code agent-edit}: a source file of about {@code --input-len} words (one of
 *       {@code --prefix-count}) followed by a small edit instruction: long context, short output;
 *   <li>{@code sharegpt:FILE}: ShareGPT conversations (a JSON array, or one per line), the first
 *       human turn of each as the prompt;
 *   <li>{@code jsonl:FILE}: one JSON object per line, {@code {"prompt": "…"}} or
 *       {@code {"messages": [{"role": "system"|"user", "content": "…"}]}}, optionally
 *       {@code "max_tokens"} for that request.
 * </ul>
 *
 * Output lengths come from {@code --output-len} (a {@code jsonl} line's {@code max_tokens} wins).
 * File workloads shuffle their entries with the seed and take {@code --num-prompts} of them,
 * cycling when the file holds fewer. A file that cannot be used is refused with a
 * {@link DatasetException} naming the file and line.
 */
public final class Workloads {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static final String[] WORDS =
            ("the of and to in is it you that he was for on are with as his they be at one have this"
                            + " from or had by hot word but what some we can out other were all there when up use your"
                            + " how said an each she which do their time if will way about many then them write would"
                            + " like so these her long make thing see him two has look more day could go come did number"
                            + " sound no most people my over know water than call first who may down side been now find"
                            + " any new work part take get place made live where after back little only round man year"
                            + " came show every good me give our under name very through just form great think say help"
                            + " low line turn cause much mean before move right boy old too same tell does set three")
                    .split(" ");

    private static final String[] QUESTIONS = {
        "Summarise the text above in one sentence.",
        "Which word appears most often above?",
        "Write a short title for the text above.",
        "List three words from the text above.",
        "What is the tone of the text above?",
        "Translate the first line above into French.",
        "Count the sentences above.",
        "Give one question the text above answers."
    };

    /**
     * What a workload needs besides its name: lengths, counts, the seed and, for
     * {@code multi-turn}, the turns of each conversation ({@code numPrompts} is then the number of
     * conversations).
     */
    public record Params(
            LengthRange inputLen, LengthRange outputLen, int numPrompts, int prefixCount, long seed, int turns) {
        public Params {
            if (numPrompts < 1) {
                throw new IllegalArgumentException("--num-prompts must be >= 1, got " + numPrompts);
            }
            if (prefixCount < 1) {
                throw new IllegalArgumentException("--prefix-count must be >= 1, got " + prefixCount);
            }
            if (turns < 1) {
                throw new IllegalArgumentException("--turns must be >= 1, got " + turns);
            }
        }

        /** Single-turn requests. */
        public Params(LengthRange inputLen, LengthRange outputLen, int numPrompts, int prefixCount, long seed) {
            this(inputLen, outputLen, numPrompts, prefixCount, seed, 1);
        }
    }

    /** The multi-turn workload's name. */
    public static final String MULTI_TURN = "multi-turn";

    private Workloads() {}

    /** The names {@code --workload} takes; FILE-based ones as {@code name:FILE}. */
    public static final List<String> NAMES =
            List.of("random", "prefix-shared", "agent-edit", MULTI_TURN, "sharegpt:FILE", "jsonl:FILE");

    /**
     * The prompts of workload {@code spec} under {@code p}; a multi-turn workload's in conversation
     * order (each conversation's turns 1..N one after another, their history left to the runner).
     */
    public static List<BenchPrompt> load(String spec, Params p) {
        Random random = new Random(p.seed());
        if (p.turns() != 1 && !spec.equals(MULTI_TURN)) {
            throw new IllegalArgumentException(
                    "--turns applies to --workload " + MULTI_TURN + " only; got --workload " + spec);
        }
        return switch (spec) {
            case MULTI_TURN -> multiTurn(p, random);
            case "random" -> random(p, random);
            case "prefix-shared" -> prefixShared(p, random);
            case "agent-edit" -> agentEdit(p, random);
            default -> {
                if (spec.startsWith("sharegpt:") && spec.length() > "sharegpt:".length()) {
                    yield pick(sharegpt(Path.of(spec.substring("sharegpt:".length())), p, random), p, random);
                }
                if (spec.startsWith("jsonl:") && spec.length() > "jsonl:".length()) {
                    yield pick(jsonl(Path.of(spec.substring("jsonl:".length())), p, random), p, random);
                }
                throw new IllegalArgumentException(
                        "--workload must be one of " + String.join(", ", NAMES) + "; got '" + spec + "'");
            }
        };
    }

    private static String words(int n, Random random) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                sb.append(i % 12 == 11 ? ". " : " ");
            }
            sb.append(WORDS[random.nextInt(WORDS.length)]);
        }
        return sb.append('.').toString();
    }

    private static List<BenchPrompt> random(Params p, Random random) {
        List<BenchPrompt> out = new ArrayList<>();
        for (int i = 0; i < p.numPrompts(); i++) {
            int in = p.inputLen().sample(random);
            int outLen = p.outputLen().sample(random);
            // The tag is a few tokens of the prompt; the words make up the rest.
            String tag = "Request " + i + ":";
            out.add(new BenchPrompt(null, tag + " " + words(Math.max(1, in - 4), random), outLen, in));
        }
        return out;
    }

    private static final String[] FOLLOW_UPS = {
        "Say that again in fewer words.",
        "Which part of your answer matters most?",
        "Give an example of what you just said.",
        "Now explain it to a child.",
        "What would you add to your answer?",
        "Turn your answer into a list.",
        "Is anything in your answer wrong?",
        "Summarise our conversation so far."
    };

    /**
     * {@code numPrompts} conversations of {@code turns} turns: turn 1 a unique text of about
     * {@code inputLen} words and a question on it, each later turn a short follow-up on the answer
     * so far. The requests' approximate lengths count the earlier turns' messages and their
     * {@code max_tokens} answers, as the conversation's history grows.
     */
    private static List<BenchPrompt> multiTurn(Params p, Random random) {
        List<BenchPrompt> out = new ArrayList<>();
        for (int c = 0; c < p.numPrompts(); c++) {
            int in = p.inputLen().sample(random);
            String first = "Conversation " + c + ": " + words(Math.max(1, in - 12), random) + " "
                    + QUESTIONS[random.nextInt(QUESTIONS.length)];
            int context = 0;
            for (int t = 1; t <= p.turns(); t++) {
                String user = t == 1 ? first : "Turn " + t + ": " + FOLLOW_UPS[random.nextInt(FOLLOW_UPS.length)];
                int own = t == 1 ? in : approxTokens(user) + 2;
                int maxTokens = p.outputLen().sample(random);
                out.add(new BenchPrompt(null, user, maxTokens, context + own, t, List.of()));
                context += own + maxTokens;
            }
        }
        return out;
    }

    private static List<BenchPrompt> prefixShared(Params p, Random random) {
        List<String> systems = new ArrayList<>();
        List<Integer> lengths = new ArrayList<>();
        for (int s = 0; s < p.prefixCount(); s++) {
            int in = p.inputLen().sample(random);
            lengths.add(in);
            systems.add("Document " + s + ": " + words(Math.max(1, in - 4), random));
        }
        List<BenchPrompt> out = new ArrayList<>();
        for (int i = 0; i < p.numPrompts(); i++) {
            int s = i % p.prefixCount();
            String q = "Question " + i + ": " + QUESTIONS[random.nextInt(QUESTIONS.length)];
            out.add(new BenchPrompt(systems.get(s), q, p.outputLen().sample(random), lengths.get(s) + 8));
        }
        return out;
    }

    private static List<BenchPrompt> agentEdit(Params p, Random random) {
        List<String> files = new ArrayList<>();
        List<Integer> functions = new ArrayList<>();
        List<Integer> lengths = new ArrayList<>();
        for (int s = 0; s < p.prefixCount(); s++) {
            int in = p.inputLen().sample(random);
            StringBuilder file = new StringBuilder("# file module_" + s + ".py\n");
            int f = 0;
            // About 12 tokens a line: "def f_3(x):\n    return x * 7 + 2\n"
            for (int tokens = 8; tokens < in; tokens += 12, f++) {
                file.append("def f_")
                        .append(f)
                        .append("(x):\n    return x * ")
                        .append(random.nextInt(10))
                        .append(" + ")
                        .append(random.nextInt(10))
                        .append('\n');
            }
            files.add(file.toString());
            functions.add(Math.max(1, f));
            lengths.add(in);
        }
        List<BenchPrompt> out = new ArrayList<>();
        for (int i = 0; i < p.numPrompts(); i++) {
            int s = i % p.prefixCount();
            int f = random.nextInt(functions.get(s));
            String ask = "Edit " + i + ": rename f_" + f + " to g_" + f
                    + " and make it return x * 2. Reply with the changed function only.";
            out.add(new BenchPrompt(
                    null, files.get(s) + "\n" + ask, p.outputLen().sample(random), lengths.get(s) + 24));
        }
        return out;
    }

    /** {@code num-prompts} of {@code all}, shuffled with the seed, cycling when there are fewer. */
    private static List<BenchPrompt> pick(List<BenchPrompt> all, Params p, Random random) {
        List<BenchPrompt> shuffled = new ArrayList<>(all);
        Collections.shuffle(shuffled, random);
        List<BenchPrompt> out = new ArrayList<>();
        for (int i = 0; i < p.numPrompts(); i++) {
            out.add(shuffled.get(i % shuffled.size()));
        }
        return out;
    }

    private static void requireReadable(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new DatasetException(file, 0, "no such file");
        }
        if (!Files.isReadable(file)) {
            throw new DatasetException(file, 0, "not readable");
        }
    }

    /** ShareGPT: a JSON array of entries, or one entry per line; each {@code {"conversations": [{"from", "value"}]}}. */
    static List<BenchPrompt> sharegpt(Path file, Params p, Random random) {
        requireReadable(file);
        List<BenchPrompt> out = new ArrayList<>();
        try {
            String text = Files.readString(file, StandardCharsets.UTF_8);
            if (text.stripLeading().startsWith("[")) {
                try (JsonParser parser = new JsonFactory().createParser(text)) {
                    parser.setCodec(JSON);
                    parser.nextToken();
                    while (parser.nextToken() == JsonToken.START_OBJECT) {
                        int line = (int) parser.currentTokenLocation().getLineNr();
                        JsonNode entry = parser.readValueAsTree();
                        out.add(sharegptEntry(file, line, entry, p, random));
                    }
                    if (parser.currentToken() != JsonToken.END_ARRAY) {
                        throw new DatasetException(
                                file,
                                (int) parser.currentTokenLocation().getLineNr(),
                                "each entry of the array must be an object with \"conversations\"");
                    }
                } catch (JsonProcessingException e) {
                    throw new DatasetException(
                            file,
                            e.getLocation() == null ? 0 : e.getLocation().getLineNr(),
                            "not valid JSON: " + e.getOriginalMessage());
                }
            } else {
                forEachLine(file, (line, node) -> out.add(sharegptEntry(file, line, node, p, random)));
            }
        } catch (IOException e) {
            throw new DatasetException(file, 0, "cannot be read: " + e.getMessage());
        }
        if (out.isEmpty()) {
            throw new DatasetException(file, 0, "holds no conversations");
        }
        return out;
    }

    private static BenchPrompt sharegptEntry(Path file, int line, JsonNode entry, Params p, Random random) {
        JsonNode turns = entry.has("conversations") ? entry.get("conversations") : entry.get("conversation");
        if (turns == null || !turns.isArray()) {
            throw new DatasetException(file, line, "an entry needs a \"conversations\" array");
        }
        String system = null;
        for (JsonNode t : turns) {
            String from = text(t, "from", "role");
            String value = text(t, "value", "content");
            if (from == null || value == null) {
                throw new DatasetException(
                        file, line, "each turn needs \"from\" and \"value\" strings (or \"role\" and \"content\")");
            }
            if (from.equals("system")) {
                system = value;
            } else if (from.equals("human") || from.equals("user")) {
                return new BenchPrompt(system, value, p.outputLen().sample(random), approxTokens(value));
            }
        }
        throw new DatasetException(file, line, "a conversation without a human turn");
    }

    private static String text(JsonNode node, String name, String alias) {
        JsonNode v = node.has(name) ? node.get(name) : node.get(alias);
        return v != null && v.isTextual() ? v.asText() : null;
    }

    /** Plain JSONL: {@code {"prompt": "…"}} or {@code {"messages": […]}} per line, optional {@code "max_tokens"}. */
    static List<BenchPrompt> jsonl(Path file, Params p, Random random) {
        requireReadable(file);
        List<BenchPrompt> out = new ArrayList<>();
        forEachLine(file, (line, node) -> out.add(jsonlEntry(file, line, node, p, random)));
        if (out.isEmpty()) {
            throw new DatasetException(file, 0, "holds no prompts");
        }
        return out;
    }

    private static BenchPrompt jsonlEntry(Path file, int line, JsonNode node, Params p, Random random) {
        int maxTokens = p.outputLen().sample(random);
        if (node.has("max_tokens")) {
            JsonNode m = node.get("max_tokens");
            if (!m.canConvertToInt() || !m.isIntegralNumber() || m.asInt() < 1) {
                throw new DatasetException(file, line, "\"max_tokens\" must be a whole number >= 1, got " + m);
            }
            maxTokens = m.asInt();
        }
        for (var it = node.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!f.equals("prompt") && !f.equals("messages") && !f.equals("max_tokens")) {
                throw new DatasetException(
                        file,
                        line,
                        "unknown field \"" + f + "\" (a line has \"prompt\" or \"messages\", and \"max_tokens\")");
            }
        }
        if (node.has("prompt") == node.has("messages")) {
            throw new DatasetException(file, line, "a line needs exactly one of \"prompt\" and \"messages\"");
        }
        if (node.has("prompt")) {
            JsonNode prompt = node.get("prompt");
            if (!prompt.isTextual() || prompt.asText().isEmpty()) {
                throw new DatasetException(file, line, "\"prompt\" must be a non-empty string");
            }
            return new BenchPrompt(null, prompt.asText(), maxTokens, approxTokens(prompt.asText()));
        }
        JsonNode messages = node.get("messages");
        if (!messages.isArray() || messages.isEmpty()) {
            throw new DatasetException(file, line, "\"messages\" must be a non-empty array");
        }
        String system = null;
        String user = null;
        for (JsonNode m : messages) {
            String role = text(m, "role", "role");
            String content = text(m, "content", "content");
            if (role == null || content == null) {
                throw new DatasetException(file, line, "each message needs \"role\" and \"content\" strings");
            }
            if (role.equals("system") && system == null && user == null) {
                system = content;
            } else if (role.equals("user") && user == null) {
                user = content;
            } else {
                throw new DatasetException(
                        file,
                        line,
                        "\"messages\" takes an optional system message then one user message, got role " + role
                                + " here");
            }
        }
        if (user == null) {
            throw new DatasetException(file, line, "\"messages\" has no user message");
        }
        return new BenchPrompt(system, user, maxTokens, approxTokens(user));
    }

    private interface LineConsumer {
        void accept(int line, JsonNode node);
    }

    /** Each non-blank line of {@code file} as a JSON object, with its 1-based line number. */
    private static void forEachLine(Path file, LineConsumer consumer) {
        try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String text;
            int line = 0;
            while ((text = in.readLine()) != null) {
                line++;
                if (text.isBlank()) {
                    continue;
                }
                JsonNode node;
                try {
                    node = JSON.readTree(text);
                } catch (JsonProcessingException e) {
                    throw new DatasetException(file, line, "not valid JSON: " + e.getOriginalMessage());
                }
                if (node == null || !node.isObject()) {
                    throw new DatasetException(file, line, "each line must be a JSON object");
                }
                consumer.accept(line, node);
            }
        } catch (IOException e) {
            throw new DatasetException(file, 0, "cannot be read: " + e.getMessage());
        }
    }

    /** About one token per word (the usage gives the exact count). */
    private static int approxTokens(String text) {
        return Math.max(1, text.split("\\s+").length);
    }
}
