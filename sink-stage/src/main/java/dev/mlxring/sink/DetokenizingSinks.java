package dev.mlxring.sink;

import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.TextSink;
import dev.mlxring.pipeline.TokenDecoder;
import dev.mlxring.sink.tools.ToolCallParser;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

/**
 * sink-stage's {@link TextSink.Factory}: per session, mlx-lm's streaming detokenizer for the
 * tokenizer, then mlx_lm.server's text state machine (reasoning separation, tool calls,
 * structural markers), with OpenAI stop-string semantics. Wire it once per model:
 *
 * <pre>{@code
 * TextSink.Factory sinks = DetokenizingSinks.forTokenizer(tokenizer, s -> tokenizer.encode(s, false));
 * }</pre>
 *
 * A tool-call parser depends on the chat template, which the tokenizer alone does not have: the
 * host infers it ({@code ToolCallParsers.infer}) and sets it with {@link #inferred} and {@link
 * Builder#toolParser}.
 *
 * Thread safety: the factory is immutable apart from a synchronized cache of compiled stop rules;
 * each {@link TextSink} it opens belongs to one session on the sink thread.
 */
public final class DetokenizingSinks implements TextSink.Factory {
    private static final int RULE_CACHE_SIZE = 128;

    private final DetokenizerKind kind;
    private final StreamingDetokenizer.Factory detokenizers;
    private final ThinkMarkers think;
    private final List<String> structuralMarkers;
    private final Function<String, int[]> encoder;
    private final boolean tokenLevelStops;
    private final boolean reasoningFromPrompt;
    private final boolean flushAtEos;
    private final ToolCallParser toolParser;
    private final Map<List<String>, Rules> rules = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<List<String>, Rules> eldest) {
            return size() > RULE_CACHE_SIZE;
        }
    };

    private record Rules(TextRules text, TokenStopRules tokens) {}

    private DetokenizingSinks(Builder b) {
        this.kind = b.kind != null ? b.kind : DetokenizerKind.infer(b.decoder.decoderConfig());
        this.encoder = b.encoder;
        this.detokenizers = kind.factory(b.decoder, b.encoder);
        this.think = b.think;
        this.structuralMarkers = List.copyOf(b.structuralMarkers);
        this.tokenLevelStops = b.tokenLevelStops && b.encoder != null;
        this.reasoningFromPrompt = b.reasoningFromPrompt;
        this.flushAtEos = b.flushAtEos;
        this.toolParser = b.toolParser;
    }

    /**
     * Everything inferred from the tokenizer the way {@code mlx_lm.tokenizer_utils.load} does: the
     * detokenizer from tokenizer.json's decoder, the think markers and structural markers from the
     * vocabulary; token-level stop matching on. No tool-call parser (it comes from the chat
     * template: use {@link #inferred} and {@link Builder#toolParser}).
     *
     * @param encoder {@code tokenizer.encode(text, add_special_tokens=False)}
     */
    public static DetokenizingSinks forTokenizer(TokenDecoder decoder, Function<String, int[]> encoder) {
        return inferred(decoder, encoder).build();
    }

    /**
     * A builder preset as {@link #forTokenizer} does, for adding what the tokenizer cannot tell
     * (the tool-call parser).
     */
    public static Builder inferred(TokenDecoder decoder, Function<String, int[]> encoder) {
        Objects.requireNonNull(encoder, "encoder");
        return builder(decoder)
                .encoder(encoder)
                .thinkMarkers(ThinkMarkers.infer(decoder, encoder).orElse(null))
                .structuralMarkers(ThinkMarkers.inferStructuralMarkers(decoder));
    }

    public static Builder builder(TokenDecoder decoder) {
        return new Builder(decoder);
    }

    public DetokenizerKind kind() {
        return kind;
    }

    /** The think markers in use, or null when the model has none. */
    public ThinkMarkers thinkMarkers() {
        return think;
    }

    /** The tool-call parser in use, or null: tool-call markup then stays in the text. */
    public ToolCallParser toolParser() {
        return toolParser;
    }

    @Override
    public TextSink open(ExecutionPlan plan) {
        Rules r = rulesFor(plan.stopStrings());
        int initial = TextRules.NORMAL;
        if (think != null
                && reasoningFromPrompt
                && plan.prompt() != null
                && plan.prompt().chatTemplated()
                && think.opensInPrompt(plan.prompt().tokenIds())) {
            initial = TextRules.REASONING;
        }
        return new DetokenizingSink(
                detokenizers.open(),
                r.text(),
                initial,
                r.tokens() == null ? null : r.tokens().cursor(),
                flushAtEos,
                toolParser,
                plan.tools(),
                plan.constraint() != null && !plan.tools().isEmpty());
    }

    private Rules rulesFor(List<String> stops) {
        synchronized (rules) {
            Rules r = rules.get(stops);
            if (r == null) {
                TokenStopRules tokens = null;
                if (tokenLevelStops && !stops.isEmpty()) {
                    List<int[]> seqs = new ArrayList<>(stops.size());
                    for (String s : stops) {
                        seqs.add(encoder.apply(s));
                    }
                    tokens = TokenStopRules.compile(seqs, stops);
                }
                r = new Rules(
                        TextRules.compile(
                                think,
                                toolParser == null ? null : toolParser.callStart(),
                                toolParser == null ? null : toolParser.callEnd(),
                                structuralMarkers,
                                stops),
                        tokens);
                rules.put(List.copyOf(stops), r);
            }
            return r;
        }
    }

    /** Configures a {@link DetokenizingSinks}; every setting has mlx-lm's default. */
    public static final class Builder {
        private final TokenDecoder decoder;
        private DetokenizerKind kind;
        private ThinkMarkers think;
        private List<String> structuralMarkers = List.of();
        private Function<String, int[]> encoder;
        private boolean tokenLevelStops = true;
        private boolean reasoningFromPrompt = true;
        private boolean flushAtEos;
        private ToolCallParser toolParser;

        private Builder(TokenDecoder decoder) {
            this.decoder = Objects.requireNonNull(decoder, "decoder");
        }

        /** The detokenizer; default {@link DetokenizerKind#infer} of the decoder's tokenizer.json section. */
        public Builder kind(DetokenizerKind k) {
            this.kind = k;
            return this;
        }

        /** The reasoning markers, or null (default) for a model without reasoning blocks. */
        public Builder thinkMarkers(ThinkMarkers t) {
            this.think = t;
            return this;
        }

        /** Strings stripped from content without a state change (mlx-lm's structural markers). */
        public Builder structuralMarkers(List<String> markers) {
            this.structuralMarkers = List.copyOf(markers);
            return this;
        }

        /**
         * {@code tokenizer.encode(text, add_special_tokens=False)}: enables token-level stop matching
         * and mlx-lm's exact {@code " ,"} probe for the naive detokenizer. Default none.
         */
        public Builder encoder(Function<String, int[]> e) {
            this.encoder = e;
            return this;
        }

        /**
         * Whether a stop string's canonical token sequence also ends generation, as in mlx_lm.server
         * (default true; needs {@link #encoder}). Off: stop strings are matched in the text only.
         */
        public Builder tokenLevelStops(boolean on) {
            this.tokenLevelStops = on;
            return this;
        }

        /**
         * Whether a prompt that leaves a think block open starts the output in reasoning (default
         * true, mlx_lm.server's rule for chat prompts).
         */
        public Builder reasoningFromPrompt(boolean on) {
            this.reasoningFromPrompt = on;
            return this;
        }

        /**
         * Whether an EOS finish flushes held-back text (a stop-string or marker prefix, a lone
         * space, an incomplete UTF-8 tail) instead of discarding it. Default false: mlx_lm.server
         * discards the EOS response's text.
         */
        public Builder flushAtEos(boolean on) {
            this.flushAtEos = on;
            return this;
        }

        /**
         * The model's tool-call format (default none): text between its start and end markers is
         * taken out of the content and parsed into {@code CommittedSpan.toolCalls}, as
         * mlx_lm.server does. Null: tool-call markup stays in the text.
         */
        public Builder toolParser(ToolCallParser parser) {
            this.toolParser = parser;
            return this;
        }

        public DetokenizingSinks build() {
            return new DetokenizingSinks(this);
        }
    }
}
