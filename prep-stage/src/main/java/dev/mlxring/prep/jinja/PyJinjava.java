package dev.mlxring.prep.jinja;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.TruthyTypeConverter;
import com.hubspot.jinjava.el.TypeConvertingMapELResolver;
import com.hubspot.jinjava.el.ext.JinjavaBeanELResolver;
import com.hubspot.jinjava.el.ext.JinjavaListELResolver;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.lib.tag.IfTag;
import com.hubspot.jinjava.loader.ResourceLocator;
import com.hubspot.jinjava.tree.TagNode;
import dev.mlxring.prep.jinja.PyExpressionParser.PyTreeBuilder;
import java.nio.charset.Charset;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import jinjava.de.odysseus.el.ExpressionFactoryImpl;
import jinjava.de.odysseus.el.tree.TreeStore;
import jinjava.de.odysseus.el.tree.impl.Builder;
import jinjava.de.odysseus.el.tree.impl.Cache;
import jinjava.javax.el.ArrayELResolver;
import jinjava.javax.el.CompositeELResolver;
import jinjava.javax.el.ELResolver;
import jinjava.javax.el.ExpressionFactory;

/**
 * A {@link Jinjava} set up to behave like the Jinja2 environment that Hugging Face transformers
 * renders chat templates with ({@code ImmutableSandboxedEnvironment(trim_blocks=True,
 * lstrip_blocks=True)} plus {@code tojson}, {@code raise_exception}, {@code strftime_now} and the
 * {@code {% generation %}} tag). Jinjava is extended, never forked; each extension is a hook Jinjava
 * or its JUEL expression engine offers. This class is the entry ({@link #create()}, {@link
 * #lstripBlocks}); the errors a render raises are read from {@link RenderErrors}. The rest lives in
 * one class per concern, none of which calls back into this one:
 *
 * <ul>
 *   <li><b>Expression parser</b> ({@link PyExpressionParser}, installed through a custom {@link
 *       ExpressionFactory}): Python slices with a step ({@code messages[::-1]}); {@code not}
 *       binding looser than comparisons; {@code -x|f} as {@code f(-x)}; {@code x|f is test};
 *       keyword arguments taking whole expressions; Python escapes in string literals.
 *   <li><b>Operators</b> ({@link PyOperators}): {@code +}, {@code ~}, {@code *}, {@code %}, {@code
 *       ==}/{@code !=} and {@code and} with Python semantics; <b>access</b> ({@link PyAccess}):
 *       attribute/item access that raises on an undefined base, Python slice semantics.
 *   <li><b>Values</b>: {@link PyNone} for Python's None (distinct from undefined = Java null);
 *       Python truthiness ({@link JinjaValues#truthy}, {@link PyTypeConverter}, {@link PyIfTag}).
 *   <li><b>Method calls and indexing</b> ({@link PyMethodResolver}, first in the EL resolver
 *       chain, with {@link PyArgs} checking arguments): Python {@code str} methods on strings
 *       ({@code startswith}, {@code split}, {@code strip}, ...), shadowing Java's methods of the
 *       same name ({@code split} is not a regex); {@code s[i]} on strings; {@code dict.get}.
 *   <li><b>Output</b> ({@link PyInterpreter#getAsString}): {@code {{ value }}} prints Python's
 *       {@code str(value)}: {@code True}/{@code False}/{@code None}, {@code ['a', 1]}, {@code {'k':
 *       None}}.
 *   <li><b>Whitespace</b>: Jinja2's lstrip_blocks rule ({@link #lstripBlocks}); {@code -} trims
 *       stop at comments.
 *   <li><b>Filters, tests, globals, tags</b>: filters ({@link PyFilters}) {@code tojson} (Python
 *       {@code json.dumps}), {@code trim}, {@code string}, {@code upper}, {@code lower}, {@code
 *       title}, {@code capitalize}, {@code replace}, {@code join}, {@code length}, {@code count},
 *       {@code items}, {@code default}/{@code d}, {@code sum}, {@code min}, {@code max}, {@code
 *       round}; tests ({@link PyTests}) {@code none}, {@code iterable}, {@code sequence}, {@code
 *       number}; globals ({@link PyGlobals}) {@code raise_exception}, {@code strftime_now} ({@link
 *       PyStrftime}), {@code dict}; the {@code generation} block tag ({@link GenerationTag}).
 * </ul>
 *
 * <p>Sandboxing: templates come from model directories and are untrusted. Template loading ({@code
 * include}/{@code import}/{@code extends}/{@code from}) is disabled and the resource locator refuses
 * everything; nested interpretation (re-rendering of output that contains <code>{{</code>) is off.
 */
public final class PyJinjava {

    private PyJinjava() {}

    /** A Jinjava that renders chat templates as transformers' Jinja2 environment does; one may serve many threads. */
    public static Jinjava create() {
        LegacyOverrides overrides = LegacyOverrides.newBuilder()
                .withEvaluateMapKeys(true) // {k: v} evaluates k, as in Python
                .withIterateOverMapKeys(true) // for k in dict -> keys
                .withParseWhitespaceControlStrictly(true)
                .withUseTrimmingForNotesAndExpressions(true) // {{- x -}} trims, as in Jinja2
                .withKeepNullableLoopValues(true)
                .withHandleBackslashInQuotesOnly(true)
                .withAllowAdjacentTextNodes(true) // {%- trims only the text right before it, not across a comment
                .build();
        ELResolver resolver = new CompositeELResolver() {
            {
                add(new PyMethodResolver());
                add(new ArrayELResolver(true));
                add(new JinjavaListELResolver(true));
                add(new TypeConvertingMapELResolver(true));
                add(new JinjavaBeanELResolver(true));
            }
        };
        JinjavaConfig config = JinjavaConfig.newBuilder()
                .withTrimBlocks(true)
                .withLstripBlocks(false) // Jinjava strips before every tag; lstripBlocks() below does Jinja2's rule
                .withKeepTrailingNewline(
                        true) // Jinja2 strips the template's last newline, not the output's; ChatTemplate does that
                .withNestedInterpretationEnabled(false)
                .withFailOnUnknownTokens(false)
                .withLegacyOverrides(overrides)
                .withElResolver(resolver)
                .withInterperterFactory(new PyInterpreter.Factory())
                .withMaxRenderDepth(10)
                .withEnableRecursiveMacroCalls(true)
                .withMaxMacroRecursionDepth(64)
                .withLocale(Locale.ROOT)
                .withDisabled(Map.of(Context.Library.TAG, Set.of("include", "import", "from", "extends")))
                .build();
        Jinjava jinjava = new PyJinjavaApp(config);
        jinjava.setResourceLocator(new NoResources());
        Context g = jinjava.getGlobalContext();
        for (Filter f : PyFilters.filters()) {
            g.registerFilter(f);
        }
        for (ExpTest t : PyTests.tests()) {
            g.registerExpTest(t);
        }
        g.registerTag(new GenerationTag());
        g.registerTag(new PyIfTag());
        for (ELFunctionDefinition fn : PyGlobals.functions()) {
            g.registerFunction(fn);
        }
        return jinjava;
    }

    /** Jinjava whose expression factory builds {@link PyExpressionParser.PyParser}s. */
    static final class PyJinjavaApp extends Jinjava {
        private final ExpressionFactory factory = new ExpressionFactoryImpl(
                new TreeStore(
                        new PyTreeBuilder(Builder.Feature.METHOD_INVOCATIONS, Builder.Feature.VARARGS),
                        new Cache(1000)),
                new PyTypeConverter());

        PyJinjavaApp(JinjavaConfig config) {
            super(config);
        }

        @Override
        public ExpressionFactory getExpressionFactory() {
            return factory;
        }

        @Override
        public ExpressionFactory getEagerExpressionFactory() {
            return factory;
        }
    }

    /** Refuses every template load: chat templates are untrusted and self-contained. */
    static final class NoResources implements ResourceLocator {
        @Override
        public String getString(String fullName, Charset encoding, JinjavaInterpreter interpreter) {
            throw new SecurityException("chat templates cannot load other templates (" + fullName + ")");
        }
    }

    // ------------------------------------------------------------------ values and truthiness

    /** JUEL's type converter with Python truthiness for {@code not}, {@code and}, {@code or}, ternaries. */
    static final class PyTypeConverter extends TruthyTypeConverter {
        private static final long serialVersionUID = 1L;

        @Override
        protected Boolean coerceToBoolean(Object value) {
            return JinjaValues.truthy(value);
        }
    }

    /** {@code {% if %}} / {@code {% elif %}} with Python truthiness (Jinjava: the string "false" is false). */
    static final class PyIfTag extends IfTag {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean isPositiveIfElseNode(TagNode tagNode, JinjavaInterpreter interpreter) {
            return JinjaValues.truthy(interpreter.resolveELExpression(
                    tagNode.getHelpers(), tagNode.getLineNumber(), tagNode.getStartPosition()));
        }
    }

    // ------------------------------------------------------------------ whitespace

    /**
     * Jinja2's {@code lstrip_blocks}, applied to the template source: whitespace between the start
     * of a line and a block or comment tag (<code>{%</code>, <code>{#</code>) is removed, unless the
     * tag is <code>{%+</code>/<code>{#+</code>, when the {@code +} is dropped instead. Text inside tags,
     * expressions, comments and {@code raw} blocks is left alone. (Jinjava's own lstrip also strips
     * before tags that follow other content on the same line, which Jinja2 does not.)
     */
    public static String lstripBlocks(String src) {
        StringBuilder out = new StringBuilder(src.length());
        int textStart = 0; // start of the current text run in src
        int i = 0;
        int n = src.length();
        while (i < n) {
            int open = src.indexOf('{', i);
            if (open < 0 || open + 1 >= n) {
                break;
            }
            char kind = src.charAt(open + 1);
            if (kind != '%' && kind != '#' && kind != '{') {
                i = open + 1;
                continue;
            }
            // text run [textStart, open)
            String text = src.substring(textStart, open);
            int afterOpen = open + 2;
            char mod = afterOpen < n ? src.charAt(afterOpen) : 0;
            if (kind != '{' && mod != '-' && mod != '+') {
                int lpos = text.lastIndexOf('\n') + 1;
                if (lpos > 0 || textStart == 0) {
                    String tail = text.substring(lpos);
                    if (!tail.isEmpty()
                            && tail.chars()
                                    .allMatch(c -> c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == 0x0b)) {
                        text = text.substring(0, lpos);
                    }
                }
            }
            out.append(text);
            int end;
            if (kind == '#') {
                int close = src.indexOf("#}", afterOpen);
                end = close < 0 ? n : close + 2;
            } else {
                end = closeOfTag(src, afterOpen, kind == '{' ? "}}" : "%}");
            }
            String tag = src.substring(open, end);
            if (kind != '{' && mod == '+') {
                tag = tag.substring(0, 2) + tag.substring(3);
            }
            out.append(tag);
            i = end;
            textStart = end;
            if (kind == '%' && tag.matches("(?s)\\{%[-+]?\\s*raw\\s*[-+]?%}")) {
                int endraw = indexOfEndRaw(src, end);
                out.append(src, end, endraw);
                i = endraw;
                textStart = endraw;
            }
        }
        out.append(src, textStart, n);
        return out.toString();
    }

    /** The index after the closing delimiter of a tag/expression, skipping string literals. */
    private static int closeOfTag(String src, int from, String close) {
        int i = from;
        while (i < src.length()) {
            char c = src.charAt(i);
            if (c == '\'' || c == '"') {
                i++;
                while (i < src.length() && src.charAt(i) != c) {
                    i += src.charAt(i) == '\\' ? 2 : 1;
                }
                i++;
            } else if (src.startsWith(close, i)) {
                return i + close.length();
            } else {
                i++;
            }
        }
        return src.length();
    }

    private static int indexOfEndRaw(String src, int from) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\{%[-+]?\\s*endraw\\s*[-+]?%}")
                .matcher(src);
        return m.find(from) ? m.start() : src.length();
    }
}
