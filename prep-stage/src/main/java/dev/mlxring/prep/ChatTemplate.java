package dev.mlxring.prep;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import dev.mlxring.prep.jinja.PyJinjava;
import dev.mlxring.prep.jinja.PyNone;
import dev.mlxring.prep.jinja.RenderErrors;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * A Hugging Face chat template, rendered the way transformers' {@code
 * tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=...)} renders it,
 * byte for byte, on the JVM (Jinjava, extended to behave like Python's Jinja2; see {@link
 * PyJinjava}).
 *
 * <p><b>What is mirrored from transformers</b> ({@code tokenization_utils_base.apply_chat_template}
 * and {@code utils/chat_template_utils.render_jinja_template}, transformers 5.x):
 *
 * <ul>
 *   <li>Template source: {@code chat_template.jinja} next to {@code tokenizer_config.json} wins over
 *       the config's {@code chat_template}; {@code additional_chat_templates/NAME.jinja} add named
 *       templates. A config value may be a string or a list of {@code {name, template}}. With
 *       several named templates, {@code tool_use} is picked when tools are given and it exists,
 *       else {@code default}.
 *   <li>Environment: {@code trim_blocks=True}, {@code lstrip_blocks=True}, loop controls ({@code
 *       break}/{@code continue}); Jinja2's source handling ({@code \r\n} and {@code \r} become
 *       {@code \n}, one trailing newline of the template is dropped); {@code tojson} is Python's
 *       {@code json.dumps(x, ensure_ascii=False)} (with {@code indent}, {@code separators}, {@code
 *       sort_keys}); globals {@code raise_exception}, {@code strftime_now}, {@code namespace},
 *       {@code dict}; the {@code {% generation %}} block renders its body.
 *   <li>Variables: {@code messages}, {@code tools} and {@code documents} (None unless given), {@code
 *       add_generation_prompt}, the named special tokens of {@code tokenizer_config.json} ({@code
 *       bos_token}, {@code eos_token}, {@code unk_token}, {@code sep_token}, {@code pad_token},
 *       {@code cls_token}, {@code mask_token}; plain strings or {@code {"content": ...}} objects,
 *       passed as strings), then the caller's extra variables (which win over the special tokens,
 *       e.g. {@code enable_thinking}). {@code tools} and {@code documents} may be given as extra
 *       variables.
 *   <li>Message normalisation: keys whose value is null are dropped from each message (templates
 *       see them as undefined, as in transformers); a message carrying reasoning under {@code
 *       reasoning_content}, {@code thinking} or {@code reasoning} gets it under both {@code
 *       thinking} and {@code reasoning_content}.
 *   <li>Errors: {@code raise_exception(msg)} throws a {@link TemplateException} whose {@link
 *       TemplateException#templateMessage()} is {@code msg} exactly and {@link
 *       TemplateException#raisedByTemplate()} is true. Any other failure (syntax error, a Python
 *       TypeError such as {@code 'a' + undefined}, an unsupported method) is a TemplateException too,
 *       never a silently wrong prompt.
 * </ul>
 *
 * <p><b>Python semantics Jinjava is extended for</b> (see {@link PyJinjava}; each item is checked
 * against transformers by the parity tests):
 *
 * <ul>
 *   <li>String methods, with Python semantics: {@code strip}, {@code lstrip}, {@code rstrip}
 *       (optional chars), {@code split}/{@code rsplit} (no argument = whitespace runs; a separator is
 *       literal, never a regex; {@code maxsplit}), {@code splitlines}, {@code startswith}/{@code
 *       endswith} (str or tuple, start, end), {@code upper}, {@code lower}, {@code casefold}, {@code
 *       title}, {@code capitalize}, {@code swapcase}, {@code replace} (count), {@code find}, {@code
 *       rfind}, {@code index}, {@code rindex}, {@code count}, {@code join}, {@code removeprefix},
 *       {@code removesuffix}, {@code isspace}, {@code isdigit}, {@code isdecimal}, {@code
 *       isnumeric}, {@code isalpha}, {@code isalnum}, {@code islower}, {@code isupper}; {@code
 *       dict.get(key[, default])} returns None for a missing key.
 *   <li>Indexing and slicing: {@code s[i]} and {@code s[-1]} on strings (by code point); slices
 *       with a step ({@code messages[::-1]}, {@code s[1:-1:2]}) with Python's clamping.
 *   <li>Values: {@code {{ x }}} prints Python's {@code str()} ({@code True}, {@code None}, {@code
 *       ['a', 1]}, {@code {'k': 'v'}}, {@code 1e-07}); None (JSON null, {@code none}, {@code tools}
 *       when not given) is distinct from undefined (a missing key or variable), so {@code is none},
 *       {@code is defined}, {@code default} and printing behave as in Jinja2; Python truthiness
 *       (the string {@code "false"} is true).
 *   <li>Operators: {@code +} (str+str, list+list, numbers; TypeError otherwise and on undefined),
 *       {@code ~}, {@code str * int}, {@code ==}/{@code !=} without coercion ({@code 1 == '1'} is
 *       False), {@code %} with the divisor's sign, {@code and}/{@code or} returning an operand,
 *       {@code not a in b} / {@code not a == b} as {@code not (...)}, {@code -x|f} as {@code
 *       f(-x)}, {@code x|f is test}, keyword arguments taking whole expressions ({@code
 *       namespace(i=messages|length - 1)}); attribute access on an undefined value raises.
 *   <li>String literals with Python escapes (&#92;n, &#92;t, &#92;xhh, &#92;uXXXX,
 *       &#92;N{name}, ...); Jinja2's {@code lstrip_blocks} rule (only whitespace between a line
 *       start and a block/comment tag; <code>{%+</code> opts out), {@code -} trimming that stops at
 *       comments.
 *   <li>Filters: {@code tojson}, {@code trim}, {@code string}, {@code upper}, {@code lower}, {@code
 *       title}, {@code capitalize}, {@code replace}, {@code join}, {@code length}/{@code count},
 *       {@code items}, {@code default}/{@code d}, {@code sum}, {@code min}, {@code max}, {@code
 *       round}; tests {@code none}, {@code iterable}, {@code sequence}, {@code number}. Other
 *       filters and tests are Jinjava's ({@code map}, {@code selectattr}, {@code rejectattr},
 *       {@code first}, {@code last}, {@code list}, {@code sort}, {@code unique}, {@code format},
 *       {@code int}, {@code float}, {@code indent}, {@code dictsort}, ... : those used by the
 *       feature parity test match).
 * </ul>
 *
 * <p><b>Not supported in this cut</b> (a template that uses them fails with a TemplateException,
 * or, where marked, renders differently):
 *
 * <ul>
 *   <li>{@code loop.previtem}, {@code loop.nextitem}, {@code loop.changed()}; loop filters ({@code
 *       {% for m in messages if m.role == 'user' %}}); {@code recursive} loops; the {@code {%
 *       filter %}} block; <code>+%}</code> (keep the newline after one tag).
 *   <li>{@code %}-formatting ({@code '%s' % x}; the {@code format} filter works) and {@code
 *       str.format}; {@code center}/{@code ljust}/{@code zfill}.
 *   <li>Renders differently: the {@code attr} filter reads dict items (Jinja2: attributes only);
 *       {@code batch} pads the last batch with None; list/dict mutation ({@code l.append(x)}),
 *       which Jinja2's sandbox rejects, works; comparison chains ({@code a < b < c}) follow JUEL.
 *   <li>{@code strftime_now} supports {@code %Y %y %m %d %e %H %I %M %S %p %A %a %B %b %h %j %w %u
 *       %F %T %D %%} (English names), not locale- or platform-specific directives.
 *   <li>JUEL reserved words cannot be variable names: {@code empty}, {@code div}, {@code mod},
 *       {@code eq}, {@code ne}, {@code lt}, {@code gt}, {@code le}, {@code ge}, {@code instanceof}.
 *   <li>{@code return_assistant_tokens_mask} (generation indices) and {@code
 *       continue_final_message}.
 * </ul>
 *
 * <p><b>Thread safety.</b> Immutable after {@link #load}; {@link #render} may be called from any
 * number of threads (each call renders in its own Jinjava interpreter).
 */
public final class ChatTemplate {

    /** A template that failed to render, or that called {@code raise_exception}. */
    public static final class TemplateException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final String templateMessage;
        private final boolean raisedByTemplate;

        TemplateException(String message, String templateMessage, boolean raisedByTemplate, Throwable cause) {
            super(message, cause);
            this.templateMessage = templateMessage;
            this.raisedByTemplate = raisedByTemplate;
        }

        /** The template's own message ({@code raise_exception}'s argument), or the engine's error. */
        public String templateMessage() {
            return templateMessage;
        }

        /** True when the template itself called {@code raise_exception}. */
        public boolean raisedByTemplate() {
            return raisedByTemplate;
        }
    }

    /** The named special tokens transformers passes to every template (SPECIAL_TOKENS_ATTRIBUTES). */
    static final List<String> SPECIAL_TOKEN_NAMES =
            List.of("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token");

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> REASONING_FIELDS = List.of("reasoning_content", "thinking", "reasoning");

    private final Path source;
    private final Map<String, String> templates; // name -> normalised source; "" key for a single template
    /** transformers' {@code tokenizer.chat_template} when it is a string (one template), as read; else null. */
    private final String text;

    private final Map<String, String> specialTokens;
    private final Jinjava jinjava;

    private ChatTemplate(
            Path source, Map<String, String> rawTemplates, String text, Map<String, String> specialTokens) {
        this.source = source;
        this.templates = normalise(rawTemplates);
        this.text = text;
        this.specialTokens = specialTokens;
        this.jinjava = PyJinjava.create();
    }

    /**
     * Loads the chat template of a model directory: {@code chat_template.jinja} (and {@code
     * additional_chat_templates/*.jinja}) if present, else {@code tokenizer_config.json}'s {@code
     * chat_template}; special tokens from {@code tokenizer_config.json} (falling back to {@code
     * special_tokens_map.json} when the config has no {@code added_tokens_decoder}, as transformers
     * does).
     *
     * @throws NoSuchFileException if {@code tokenizer_config.json} does not exist (message names it)
     * @throws IOException if a file is unreadable or malformed, or no chat template is found (the
     *     message names the file)
     */
    public static ChatTemplate load(Path modelDir) throws IOException {
        Path configFile = modelDir.resolve("tokenizer_config.json");
        if (!Files.isRegularFile(configFile)) {
            throw new NoSuchFileException(
                    configFile.toString(),
                    null,
                    "tokenizer_config.json not found (is " + modelDir + " a prepared model directory?)");
        }
        JsonNode config = readJson(configFile);
        if (!config.isObject()) {
            throw new IOException(configFile + ": malformed, not a JSON object");
        }

        Map<String, String> special = new LinkedHashMap<>();
        Path specialFile = modelDir.resolve("special_tokens_map.json");
        JsonNode specialMap =
                !config.has("added_tokens_decoder") && Files.isRegularFile(specialFile) ? readJson(specialFile) : null;
        for (String name : SPECIAL_TOKEN_NAMES) {
            JsonNode v = specialMap != null && specialMap.has(name) ? specialMap.get(name) : config.get(name);
            String s = tokenString(v);
            if (s != null) {
                special.put(name, s);
            }
        }

        Map<String, String> templates = new TreeMap<>();
        Path source;
        Path jinjaFile = modelDir.resolve("chat_template.jinja");
        Path extraDir = modelDir.resolve("additional_chat_templates");
        if (Files.isRegularFile(jinjaFile) || Files.isDirectory(extraDir)) {
            source = Files.isRegularFile(jinjaFile) ? jinjaFile : extraDir;
            if (Files.isRegularFile(jinjaFile)) {
                templates.put("default", Files.readString(jinjaFile, StandardCharsets.UTF_8));
            }
            if (Files.isDirectory(extraDir)) {
                try (DirectoryStream<Path> ds = Files.newDirectoryStream(extraDir, "*.jinja")) {
                    for (Path p : ds) {
                        String name = p.getFileName().toString();
                        templates.put(
                                name.substring(0, name.length() - ".jinja".length()),
                                Files.readString(p, StandardCharsets.UTF_8));
                    }
                }
            }
        } else {
            source = configFile;
            JsonNode ct = config.get("chat_template");
            if (ct == null || ct.isNull()) {
                throw new IOException(configFile + " has no \"chat_template\" (and there is no chat_template.jinja"
                        + " in " + modelDir + "): this model has no chat template");
            }
            if (ct.isTextual()) {
                templates.put("default", ct.asText());
            } else if (ct.isArray()) {
                for (JsonNode t : ct) {
                    JsonNode name = t.get("name");
                    JsonNode template = t.get("template");
                    if (name == null || !name.isTextual() || template == null || !template.isTextual()) {
                        throw new IOException(
                                configFile + ": malformed chat_template entry (need {name, template}): " + t);
                    }
                    templates.put(name.asText(), template.asText());
                }
            } else {
                throw new IOException(configFile + ": chat_template must be a string or a list of {name, template}");
            }
        }
        if (templates.isEmpty()) {
            throw new IOException(source + ": no chat template found");
        }
        // transformers holds a string for one unnamed template (a .jinja file read in text mode:
        // universal newlines), a dict for named ones.
        String text = null;
        if (templates.size() == 1 && templates.containsKey("default")) {
            if (Files.isRegularFile(jinjaFile)) {
                text = templates.get("default").replace("\r\n", "\n").replace('\r', '\n');
            } else if (source == configFile && config.path("chat_template").isTextual()) {
                text = templates.get("default");
            }
        }
        return new ChatTemplate(source, templates, text, Collections.unmodifiableMap(special));
    }

    /**
     * Whether {@link #load} would find a chat template in {@code modelDir}: a {@code
     * chat_template.jinja}, an {@code additional_chat_templates/} directory, or a non-null {@code
     * chat_template} in {@code tokenizer_config.json}. Never throws; an unreadable or malformed
     * config counts as "no template" (load() reports the details).
     */
    public static boolean exists(Path modelDir) {
        if (Files.isRegularFile(modelDir.resolve("chat_template.jinja"))
                || Files.isDirectory(modelDir.resolve("additional_chat_templates"))) {
            return true;
        }
        Path configFile = modelDir.resolve("tokenizer_config.json");
        if (!Files.isRegularFile(configFile)) {
            return false;
        }
        try {
            JsonNode ct = readJson(configFile).get("chat_template");
            return ct != null && !ct.isNull();
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * A chat template from its source text (for tests and callers that have the template already).
     *
     * @param specialTokens template variables such as {@code bos_token}; may be empty
     */
    public static ChatTemplate of(String template, Map<String, String> specialTokens) {
        Map<String, String> t = new TreeMap<>();
        t.put("default", Objects.requireNonNull(template, "template"));
        return new ChatTemplate(null, t, template, Map.copyOf(specialTokens));
    }

    /** Jinja2's lexer: every newline sequence becomes \n, and one trailing newline is dropped. */
    private static Map<String, String> normalise(Map<String, String> templates) {
        Map<String, String> out = new TreeMap<>();
        templates.forEach((name, src) -> {
            String s = src.replace("\r\n", "\n").replace('\r', '\n');
            if (s.endsWith("\n")) {
                s = s.substring(0, s.length() - 1);
            }
            out.put(name, PyJinjava.lstripBlocks(s));
        });
        return Collections.unmodifiableMap(out);
    }

    /** The file the template was read from ({@code tokenizer_config.json} or {@code chat_template.jinja}), or null. */
    public Path source() {
        return source;
    }

    /**
     * The template source as transformers' {@code tokenizer.chat_template} holds it when that is a
     * string: the one template, as read (before Jinja2's newline handling); null when the model has
     * several named templates (transformers then holds a dict). mlx-lm infers the tool-call format
     * from this text.
     */
    public String text() {
        return text;
    }

    /** The names of the available templates ({@code default}, {@code tool_use}, ...). */
    public List<String> templateNames() {
        return List.copyOf(templates.keySet());
    }

    /** The special-token variables passed to the template ({@code bos_token} etc.). */
    public Map<String, String> specialTokens() {
        return specialTokens;
    }

    /** {@link #render(List, boolean, Map)} without extra variables. */
    public String render(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
        return render(messages, addGenerationPrompt, Map.of());
    }

    /**
     * Renders a conversation to the prompt text.
     *
     * @param messages the conversation: maps with {@code role}, {@code content} and whatever else the
     *     template reads ({@code tool_calls}, {@code reasoning_content}, ...). Values may be strings,
     *     numbers, booleans, null, lists and maps (JSON data)
     * @param addGenerationPrompt append the assistant-turn header the model should continue from
     * @param extraContext extra template variables ({@code enable_thinking}, {@code tools}, {@code
     *     documents}, ...), which override the special tokens; may be null
     * @return the rendered prompt, identical to transformers' {@code apply_chat_template(...,
     *     tokenize=False)}
     * @throws TemplateException if the template raises or cannot be rendered
     * @throws IllegalArgumentException if {@code messages} is empty or holds unsupported values
     */
    public String render(
            List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, Object> extraContext) {
        Objects.requireNonNull(messages, "messages");
        if (messages.isEmpty()) {
            throw new IllegalArgumentException(
                    "Cannot apply chat template to an empty conversation. Provide at least one message.");
        }
        Map<String, Object> extra = extraContext == null ? Map.of() : extraContext;
        for (String reserved : List.of("messages", "add_generation_prompt")) {
            if (extra.containsKey(reserved)) {
                throw new IllegalArgumentException(
                        "extraContext must not contain \"" + reserved + "\": it is a render() argument");
            }
        }
        Object tools = plainData(extra.get("tools"), "tools");
        String template = select(tools != PyNone.INSTANCE);

        Map<String, Object> vars = new LinkedHashMap<>();
        vars.put("none", PyNone.INSTANCE); // Jinja2's none/None literals
        vars.put("None", PyNone.INSTANCE);
        vars.putAll(specialTokens);
        extra.forEach((k, v) -> vars.put(k, plainData(v, k)));
        vars.put("messages", normaliseMessages(messages));
        vars.put("tools", tools);
        vars.put("documents", plainData(extra.get("documents"), "documents"));
        vars.put("add_generation_prompt", addGenerationPrompt);

        RenderErrors.clear();
        try {
            RenderResult result = jinjava.renderForResult(template, vars);
            String raised = RenderErrors.firstRaised();
            if (raised != null) {
                throw new TemplateException("chat template " + where() + " raised: " + raised, raised, true, null);
            }
            String pyError = RenderErrors.firstPyError();
            if (pyError != null) {
                throw new TemplateException("chat template " + where() + " failed: " + pyError, pyError, false, null);
            }
            List<TemplateError> errors = result.getErrors();
            if (!errors.isEmpty()) {
                List<String> lines = new ArrayList<>();
                for (TemplateError e : errors) {
                    lines.add(e.getSeverity() + " " + e.getReason() + " at line " + e.getLineno() + ": "
                            + e.getMessage());
                }
                String first = errors.getFirst().getMessage();
                Throwable cause = errors.getFirst().getException();
                throw new TemplateException(
                        "chat template " + where() + " failed:\n  " + String.join("\n  ", lines), first, false, cause);
            }
            return result.getOutput();
        } finally {
            RenderErrors.clear();
        }
    }

    private String where() {
        return source == null ? "(from string)" : "(" + source + ")";
    }

    /** PreTrainedTokenizerBase.get_chat_template: one template, or tool_use/default among several. */
    private String select(boolean hasTools) {
        if (templates.size() == 1) {
            return templates.values().iterator().next();
        }
        if (hasTools && templates.containsKey("tool_use")) {
            return templates.get("tool_use");
        }
        String t = templates.get("default");
        if (t == null) {
            throw new TemplateException(
                    "This model has multiple chat templates with no default specified (" + where() + "); available: "
                            + templates.keySet(),
                    "no default chat template",
                    false,
                    null);
        }
        return t;
    }

    /** _normalize_chat_messages + _plain_template_data + _alias_reasoning_fields. */
    private static List<Object> normaliseMessages(List<Map<String, Object>> messages) {
        List<Object> out = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            Map<String, Object> m = messages.get(i);
            if (m == null) {
                throw new IllegalArgumentException("messages[" + i + "] is null");
            }
            Map<String, Object> copy = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : m.entrySet()) {
                if (e.getValue() != null) {
                    copy.put(e.getKey(), plainData(e.getValue(), "messages[" + i + "]." + e.getKey()));
                }
            }
            Object reasoning = null;
            for (String f : REASONING_FIELDS) {
                if (copy.get(f) != null) {
                    reasoning = copy.get(f);
                    break;
                }
            }
            if (reasoning != null) {
                Map<String, Object> aliased = new LinkedHashMap<>();
                aliased.put("thinking", reasoning);
                aliased.putAll(copy);
                aliased.put("reasoning_content", reasoning);
                copy = aliased;
            }
            out.add(copy);
        }
        return out;
    }

    /**
     * Deep copy to JSON-like data: String, Number, Boolean, List, Map with String keys; null becomes
     * Python's None ({@link PyNone}), which templates can tell from an undefined value.
     */
    private static Object plainData(Object v, String where) {
        if (v == null) {
            return PyNone.INSTANCE;
        }
        if (v instanceof String || v instanceof Number || v instanceof Boolean) {
            return v;
        }
        if (v instanceof CharSequence || v instanceof Character) {
            return v.toString();
        }
        if (v instanceof Map<?, ?> m) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!(e.getKey() instanceof String k)) {
                    throw new IllegalArgumentException(where + ": map keys must be strings, got " + e.getKey());
                }
                out.put(k, plainData(e.getValue(), where + "." + k));
            }
            return out;
        }
        if (v instanceof Collection<?> c) {
            List<Object> out = new ArrayList<>(c.size());
            int i = 0;
            for (Object x : c) {
                out.add(plainData(x, where + "[" + i++ + "]"));
            }
            return out;
        }
        if (v instanceof Object[] arr) {
            return plainData(java.util.Arrays.asList(arr), where);
        }
        if (v instanceof JsonNode node) {
            return plainData(JSON.convertValue(node, Object.class), where);
        }
        throw new IllegalArgumentException(where + ": unsupported value type "
                + v.getClass().getName() + " (use String, Number, Boolean, null, List or Map)");
    }

    private static JsonNode readJson(Path file) throws IOException {
        try {
            return JSON.readTree(Files.readString(file, StandardCharsets.UTF_8));
        } catch (JacksonException e) {
            throw new IOException(file + ": malformed JSON: " + e.getOriginalMessage(), e);
        }
    }

    private static String tokenString(JsonNode v) {
        if (v == null || v.isNull()) {
            return null;
        }
        if (v.isTextual()) {
            return v.asText();
        }
        if (v.isObject() && v.path("content").isTextual()) {
            return v.get("content").asText();
        }
        return null;
    }
}
