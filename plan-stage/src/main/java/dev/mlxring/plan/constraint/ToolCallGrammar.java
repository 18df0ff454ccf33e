package dev.mlxring.plan.constraint;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.OutputConstraint;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Forced and strict tool calls as an llguidance Lark grammar in the model's own tool-call syntax,
 * so that the sink's tool parser sees what it expects: the grammar's language is calls that the
 * parser of {@link ToolSyntax#format()} reads back, each naming a tool the choice allows, with
 * arguments valid against that tool's {@code parameters} schema.
 *
 * <p>Covered formats ({@link #COVERED}):
 *
 * <ul>
 *   <li>{@code json_tools} (Qwen2/2.5/3, SmolLM3, Hermes): {@code <tool_call>} {@code {"name":
 *       "f", "arguments": {...}}} {@code </tool_call>}, with whitespace around the object and
 *       between calls;
 *   <li>{@code mistral}: {@code [TOOL_CALLS]}, then the JSON list {@code [{"name": "f",
 *       "arguments": {...}}, ...]} or {@code f[ARGS]{...}} (repeated after another
 *       {@code [TOOL_CALLS]}), running to the end of the output;
 *   <li>{@code qwen3_coder} (Qwen3-Coder): {@code <tool_call>} {@code <function=f>}
 *       {@code <parameter=k>\nVALUE\n</parameter>}... {@code </function>} {@code </tool_call>},
 *       raw values held to their property's type ({@link XmlToolFrames}, which refuses the
 *       properties raw text cannot hold to their schema).
 * </ul>
 *
 * Any other format, or none, is refused. Markers are written as the tokenizer writes them
 * ({@link MarkerPiece}): a special token as {@code <[id]>}, text as a string.
 *
 * <p>Reasoning: with think markers the output may open with a reasoning block of free text that
 * contains neither the think end nor the tool-call start as text (the sink would leave the block
 * there); when the prompt leaves the block open, the output starts inside it and must close it.
 * The constraint proper starts after the block.
 *
 * <p>Gaps: a string argument containing the call's end marker as text (e.g. {@code
 * "</tool_call>"}) is valid JSON and allowed, but the sink ends the call there; whitespace
 * between the grammar's own pieces is unbounded, as inside llguidance's JSON.
 *
 * <p>Stateless; any thread.
 */
public final class ToolCallGrammar {
    /** The tool formats (mlx-lm parser module names) a grammar can be built for. */
    public static final List<String> COVERED = List.of("json_tools", "mistral", "qwen3_coder");

    private static final ObjectMapper JSON = new ObjectMapper();
    /** The request field a compiled grammar's errors name. */
    private static final String FIELD = "tools";

    private static final String ANY_TEXT = "(?s:.*)";
    private static final String SPACE = "[ \\t\\r\\n]*";

    private ToolCallGrammar() {}

    /**
     * The grammar for one request's tools and tool choice.
     *
     * @param tools the request's tools in OpenAI's chat shape ({@code {"type": "function",
     *     "function": {"name", "parameters"?, "strict"?}}}; Anthropic's and Responses' tools as
     *     ingress normalizes them); {@code parameters} absent or null means any object
     * @param choice which calls are demanded; under {@link ToolChoice.Mode#AUTO} only the tools
     *     with {@code "strict": true} have their arguments enforced (the others take any object),
     *     and at least one tool must be strict or calls not parallel (then at most one call)
     * @param syntax the model's tool-call syntax
     * @param thinkOpenInPrompt whether the prompt leaves a reasoning block open (sink-stage's
     *     {@code ThinkMarkers.opensInPrompt})
     * @return a {@link OutputConstraint.Kind#LARK} constraint naming the field {@code tools}, for
     *     {@link ConstraintCompiler#compile} (which refuses what llguidance cannot compile)
     * @throws IllegalArgumentException with a message naming the problem: the format is not
     *     covered (or the model has none), a tool is malformed, the named tool is not among the
     *     tools, a schema keyword would not be enforced ({@link JsonSchemaSubset}; named as {@code
     *     tools[i].function.parameters} and the keyword's JSON pointer), {@code AUTO} with no strict
     *     tool and parallel calls, an open reasoning block for a model without think markers, or a marker the
     *     tokenizer cannot write in a way the grammar can follow
     */
    public static OutputConstraint forTools(
            List<Map<String, Object>> tools, ToolChoice choice, ToolSyntax syntax, boolean thinkOpenInPrompt) {
        String format = syntax.format();
        if (format == null) {
            throw new IllegalArgumentException(
                    choice.describe() + " needs a tool-call format, and this model has none");
        }
        if (!COVERED.contains(format)) {
            throw new IllegalArgumentException(choice.describe() + " is not supported for this model's tool format "
                    + format + " (supported: " + String.join(", ", COVERED) + ")");
        }
        if (thinkOpenInPrompt && !syntax.thinks()) {
            throw new IllegalArgumentException(
                    "the prompt opens a reasoning block, but the model has no think markers");
        }
        List<Tool> callable = callable(tools, choice);
        Markers m = new Markers(syntax, format);
        StringBuilder rules = new StringBuilder();
        String calls = m.end != null ? taggedCalls(rules, m, choice) : mistralCalls(rules, m, choice);
        String think = "";
        if (syntax.thinks()) {
            think = thinkRules(rules, m, thinkOpenInPrompt);
        }
        if (format.equals("qwen3_coder")) {
            XmlToolFrames.rules(
                    rules,
                    callable.stream().map(Tool::name).toList(),
                    callable.stream().map(Tool::schema).toList(),
                    callable.stream().map(Tool::at).toList());
        } else {
            frameRules(rules, callable);
        }
        if (m.argsMarker != null) {
            headerRules(rules, m, callable);
        }
        rules.append("WS: /[ \\t\\r\\n]+/\n");
        return new OutputConstraint(OutputConstraint.Kind.LARK, "start: " + think + calls + "\n" + rules, FIELD);
    }

    /**
     * The start rule's calls for a format whose calls are tagged (json_tools; qwen3_coder, whose
     * parser allows one newline after {@code </function>}); adds the rules they use.
     */
    private static String taggedCalls(StringBuilder g, Markers m, ToolChoice choice) {
        g.append("call_rest: WS? ")
                .append(m.xml ? "xframe \"\\n\"?" : "frame WS?")
                .append(' ')
                .append(m.rule(m.end))
                .append('\n');
        if (choice.mode() == ToolChoice.Mode.AUTO) {
            leadRules(g, m);
            return "(lead call_rest)" + (choice.parallel() ? "*" : "?") + " TEXT";
        }
        String call = m.rule(m.start) + " call_rest";
        return "WS? " + call + (choice.parallel() ? " (WS? " + call + ")*" : "");
    }

    /** The start rule's calls for mistral (they run to the end); adds the rules they use. */
    private static String mistralCalls(StringBuilder g, Markers m, ToolChoice choice) {
        String list = "\"[\" WS? frame " + (choice.parallel() ? "(WS? \",\" WS? frame)* " : "") + "WS? \"]\"";
        String headers = "hcall" + (choice.parallel() ? " (" + m.rule(m.start) + " hcall)*" : "");
        g.append("tool_rest: WS? (").append(list).append(" | ").append(headers).append(") WS?\n");
        if (choice.mode() == ToolChoice.Mode.AUTO) {
            leadRules(g, m);
            return "(TEXT | lead tool_rest)";
        }
        return "WS? " + m.rule(m.start) + " tool_rest";
    }

    /** {@code lead}: free text up to and including the first call start; {@code TEXT}: free text without one. */
    private static void leadRules(StringBuilder g, Markers m) {
        g.append("TEXT: /")
                .append(ANY_TEXT)
                .append("/ & ~/")
                .append(ANY_TEXT)
                .append(rx(m.start))
                .append(ANY_TEXT)
                .append("/\n");
        g.append(m.delimited("lead", "TEXT", m.start, null));
    }

    /**
     * Rules for a free reasoning block ahead of some other grammar, for a model with think
     * markers: appends them to {@code rules} and returns the start rule's part ({@code think? } or,
     * when the prompt left the block open, {@code think_rest }).
     */
    static String reasoningRules(StringBuilder rules, ToolSyntax syntax, boolean open) {
        String format = syntax.format() != null && COVERED.contains(syntax.format()) ? syntax.format() : "json_tools";
        return thinkRules(rules, new Markers(syntax, format), open);
    }

    /**
     * {@code think}: the reasoning block, {@code think_rest}: the block after its start marker;
     * the text inside contains neither the end marker nor the call start.
     *
     * @return the start rule's reasoning part
     */
    private static String thinkRules(StringBuilder g, Markers m, boolean open) {
        if (!open) {
            g.append("think: ").append(m.rule(m.thinkStart)).append(" think_rest\n");
        }
        g.append("THINK_TEXT: /")
                .append(ANY_TEXT)
                .append("/ & ~/")
                .append(ANY_TEXT)
                .append('(')
                .append(rx(m.thinkEnd))
                .append('|')
                .append(rx(m.start))
                .append(')')
                .append(ANY_TEXT)
                .append("/\n");
        g.append(m.delimited("think_rest", "THINK_TEXT", m.thinkEnd, m.start));
        return open ? "think_rest " : "think? ";
    }

    /**
     * Per tool, {@code frame_i}: the call object {@code {"name": "f", "arguments": ...}} (keys in
     * that order, whitespace as json.loads allows), {@code args_i}: the arguments' schema; and
     * {@code frame}: any of them.
     */
    private static void frameRules(StringBuilder g, List<Tool> callable) {
        for (int i = 0; i < callable.size(); i++) {
            Tool t = callable.get(i);
            g.append("args_")
                    .append(i)
                    .append(": %json ")
                    .append(t.schema == null ? "{\"type\":\"object\"}" : t.schema.toString())
                    .append('\n');
            g.append("frame_")
                    .append(i)
                    .append(": HEAD_")
                    .append(i)
                    .append(" WS? args_")
                    .append(i)
                    .append(" WS? \"}\"\n");
            g.append("HEAD_")
                    .append(i)
                    .append(": /")
                    .append(rx("{"))
                    .append(SPACE)
                    .append(rx("\"name\""))
                    .append(SPACE)
                    .append(rx(":"))
                    .append(SPACE)
                    .append(rx(jsonString(t.name)))
                    .append(SPACE)
                    .append(rx(","))
                    .append(SPACE)
                    .append(rx("\"arguments\""))
                    .append(SPACE)
                    .append(rx(":"))
                    .append("/\n");
        }
        g.append("frame: ").append(alternatives("frame_", callable.size())).append('\n');
    }

    /** Per tool, {@code hcall_i}: mistral's {@code f[ARGS]{...}}; and {@code hcall}: any of them. */
    private static void headerRules(StringBuilder g, Markers m, List<Tool> callable) {
        for (int i = 0; i < callable.size(); i++) {
            g.append("hcall_")
                    .append(i)
                    .append(": ")
                    .append(jsonString(callable.get(i).name))
                    .append(' ')
                    .append(m.rule(m.argsMarker))
                    .append(" WS? args_")
                    .append(i)
                    .append('\n');
        }
        g.append("hcall: ").append(alternatives("hcall_", callable.size())).append('\n');
    }

    private static String alternatives(String prefix, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            b.append(i == 0 ? "" : " | ").append(prefix).append(i);
        }
        return b.toString();
    }

    /**
     * One tool a call may name: its name, the schema its arguments are held to (null: any object)
     * and where that schema is in the request.
     */
    private record Tool(String name, JsonNode schema, String at) {}

    /** The tools the choice lets the model call, with their argument schemas, checked. */
    private static List<Tool> callable(List<Map<String, Object>> tools, ToolChoice choice) {
        if (tools == null || tools.isEmpty()) {
            throw new IllegalArgumentException(choice.describe() + " needs at least one tool in tools");
        }
        List<Tool> out = new ArrayList<>();
        boolean anyStrict = false;
        for (int i = 0; i < tools.size(); i++) {
            String at = "tools[" + i + "]";
            if (!(tools.get(i) != null && tools.get(i).get("function") instanceof Map<?, ?> fn)) {
                throw new IllegalArgumentException(at + " must be {\"type\": \"function\", \"function\": {...}}");
            }
            if (!(fn.get("name") instanceof String name) || name.isEmpty()) {
                throw new IllegalArgumentException(at + ".function.name must be a non-empty string");
            }
            if (choice.mode() == ToolChoice.Mode.NAMED && !name.equals(choice.name())) {
                continue;
            }
            boolean strict = Boolean.TRUE.equals(fn.get("strict"));
            anyStrict |= strict;
            boolean enforced = choice.mode() != ToolChoice.Mode.AUTO || strict;
            String where = at + ".function.parameters";
            out.add(new Tool(name, enforced ? schema(fn.get("parameters"), where) : null, where));
        }
        if (choice.mode() == ToolChoice.Mode.NAMED && out.isEmpty()) {
            throw new IllegalArgumentException(choice.describe() + ": no such function in tools");
        }
        if (choice.mode() == ToolChoice.Mode.AUTO && !anyStrict && choice.parallel()) {
            throw new IllegalArgumentException(
                    "no tool is strict and calls may be parallel: tool_choice auto has " + "nothing to enforce");
        }
        return out;
    }

    /** The parameters schema (null: any object), refused where a keyword would not be enforced. */
    private static JsonNode schema(Object parameters, String at) {
        if (parameters == null) {
            return null;
        }
        JsonNode node = JSON.valueToTree(parameters);
        if (!node.isObject()) {
            throw new IllegalArgumentException(at + " must be a JSON Schema object");
        }
        String why = JsonSchemaSubset.check(node);
        if (why != null) {
            throw new IllegalArgumentException(at + ": " + why);
        }
        return node;
    }

    /** The format's markers and how the tokenizer writes each. */
    private static final class Markers {
        final String start;
        final String end;
        final String argsMarker;
        final String thinkStart;
        final String thinkEnd;
        /** Whether calls are qwen3_coder's XML function blocks. */
        final boolean xml;

        private final ToolSyntax syntax;

        Markers(ToolSyntax syntax, String format) {
            this.syntax = syntax;
            this.xml = format.equals("qwen3_coder");
            boolean tagged = xml || format.equals("json_tools");
            this.start = tagged ? "<tool_call>" : "[TOOL_CALLS]";
            this.end = tagged ? "</tool_call>" : null;
            this.argsMarker = tagged ? null : "[ARGS]";
            this.thinkStart = syntax.thinkStart();
            this.thinkEnd = syntax.thinkEnd();
        }

        /** The marker as a rule's items: its special tokens as {@code <[id]>}, its text runs as strings. */
        String rule(String marker) {
            StringBuilder b = new StringBuilder();
            for (MarkerPiece p : syntax.pieces().apply(marker)) {
                b.append(b.isEmpty() ? "" : " ")
                        .append(p.isSpecial() ? "<[" + p.tokenId() + "]>" : jsonString(p.text()));
            }
            return b.toString();
        }

        /**
         * Rule {@code name}: free text (terminal {@code free}, which contains neither {@code
         * marker} nor {@code excluded} as text) then {@code marker}. A marker that opens with a
         * special token follows {@code free} as tokens; a marker of text only ends a lazy lexeme
         * (free text without {@code excluded}, ending at the marker's first occurrence), as a
         * greedy one would swallow the marker.
         *
         * @param excluded text the free text cannot contain, or null
         */
        String delimited(String name, String free, String marker, String excluded) {
            List<MarkerPiece> pieces = syntax.pieces().apply(marker);
            if (pieces.getFirst().isSpecial()) {
                return name + ": " + free + " " + rule(marker) + "\n";
            }
            if (pieces.size() == 1) {
                String terminal = name.toUpperCase(java.util.Locale.ROOT);
                return name + "[lazy]: " + terminal + "\n" + terminal + ": /" + ANY_TEXT + rx(marker) + "/"
                        + (excluded == null ? "" : " & ~/" + ANY_TEXT + rx(excluded) + ANY_TEXT + "/") + "\n";
            }
            throw new IllegalArgumentException("marker " + marker + " starts with text and goes on with a special "
                    + "token; a grammar cannot end free text at it");
        }
    }

    /** {@code text} as a JSON string, which is also a Lark string literal (llguidance reads those as JSON). */
    static String jsonString(String text) {
        try {
            return JSON.writeValueAsString(text);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code text} as a regex matching exactly it: ASCII letters, digits and '_' as they are, the rest escaped. */
    static String rx(String text) {
        StringBuilder b = new StringBuilder();
        text.codePoints().forEach(c -> {
            if (c < 128 && (Character.isLetterOrDigit(c) || c == '_')) {
                b.appendCodePoint(c);
            } else if (c < 128) {
                b.append(String.format("\\x%02X", c));
            } else {
                b.append(String.format("\\x{%X}", c));
            }
        });
        return b.toString();
    }
}
