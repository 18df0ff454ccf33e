package dev.mlxring.prep;

import static jinjava.de.odysseus.el.tree.impl.Builder.Feature.METHOD_INVOCATIONS;
import static jinjava.de.odysseus.el.tree.impl.Builder.Feature.NULL_PROPERTIES;
import static jinjava.de.odysseus.el.tree.impl.Scanner.Symbol.COLON;
import static jinjava.de.odysseus.el.tree.impl.Scanner.Symbol.DOT;
import static jinjava.de.odysseus.el.tree.impl.Scanner.Symbol.IDENTIFIER;
import static jinjava.de.odysseus.el.tree.impl.Scanner.Symbol.LPAREN;
import static jinjava.de.odysseus.el.tree.impl.Scanner.Symbol.RBRACK;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.TruthyTypeConverter;
import com.hubspot.jinjava.el.ext.AdditionOperator;
import com.hubspot.jinjava.el.ext.AstNamedParameter;
import com.hubspot.jinjava.el.ext.AstRangeBracket;
import com.hubspot.jinjava.el.ext.CollectionMembershipOperator;
import com.hubspot.jinjava.el.ext.ExtendedParser;
import com.hubspot.jinjava.el.ExtendedSyntaxBuilder;
import com.hubspot.jinjava.el.ext.JinjavaBeanELResolver;
import com.hubspot.jinjava.el.ext.JinjavaListELResolver;
import com.hubspot.jinjava.el.ext.NamedParameter;
import com.hubspot.jinjava.el.ext.StringConcatOperator;
import com.hubspot.jinjava.el.TypeConvertingMapELResolver;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.ContextConfigurationIF.ErrorHandlingStrategyIF.TemplateErrorTypeHandlingStrategy;
import com.hubspot.jinjava.interpret.ErrorHandlingStrategy;
import com.hubspot.jinjava.interpret.InterpreterFactory;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.lib.tag.IfTag;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.loader.ResourceLocator;
import com.hubspot.jinjava.objects.SafeString;
import com.hubspot.jinjava.objects.collections.PyList;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;
import com.hubspot.jinjava.util.HasObjectTruthValue;

import java.beans.FeatureDescriptor;
import java.nio.charset.Charset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

import jinjava.de.odysseus.el.ExpressionFactoryImpl;
import jinjava.de.odysseus.el.misc.NumberOperations;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.TreeStore;
import jinjava.de.odysseus.el.tree.impl.Builder;
import jinjava.de.odysseus.el.tree.impl.Cache;
import jinjava.de.odysseus.el.tree.impl.Parser;
import jinjava.de.odysseus.el.tree.impl.Scanner;
import jinjava.de.odysseus.el.tree.impl.ast.AstBinary;
import jinjava.de.odysseus.el.tree.impl.ast.AstBracket;
import jinjava.de.odysseus.el.tree.impl.ast.AstDot;
import jinjava.de.odysseus.el.tree.impl.ast.AstIdentifier;
import jinjava.de.odysseus.el.tree.impl.ast.AstParameters;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.de.odysseus.el.tree.impl.ast.AstProperty;
import jinjava.de.odysseus.el.tree.impl.ast.AstUnary;
import jinjava.javax.el.ArrayELResolver;
import jinjava.javax.el.CompositeELResolver;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;
import jinjava.javax.el.ExpressionFactory;
import jinjava.javax.el.PropertyNotFoundException;

/**
 * A {@link Jinjava} set up to behave like the Jinja2 environment that Hugging Face transformers
 * renders chat templates with ({@code ImmutableSandboxedEnvironment(trim_blocks=True,
 * lstrip_blocks=True)} plus {@code tojson}, {@code raise_exception}, {@code strftime_now} and the
 * {@code {% generation %}} tag). Jinjava is extended, never forked; each extension is a hook Jinjava
 * or its JUEL expression engine offers:
 *
 * <ul>
 *   <li><b>Expression parser</b> ({@link PyParser}, installed through a custom {@link
 *       ExpressionFactory}; {@link PyScanner} for string literals): Python slices with a step
 *       ({@code messages[::-1]}) and Python slice semantics; {@code not} binding looser than
 *       comparisons; {@code -x|f} as {@code f(-x)}; {@code x|f is test}; keyword arguments taking
 *       whole expressions; Python escapes in string literals; operators with Python semantics
 *       ({@link PyAdd}, {@link PyConcat}, {@link PyMul}, {@link PyMod}, {@link PyEq}, {@link
 *       PyAnd}); attribute/item access that raises on an undefined base ({@link PyDot}, {@link
 *       PyBracket}).
 *   <li><b>Values</b>: {@link PyNone} for Python's None (distinct from undefined = Java null);
 *       Python truthiness ({@link PyTypeConverter}, {@link PyIfTag}).
 *   <li><b>Method calls and indexing</b> ({@link PyMethodResolver}, first in the EL resolver
 *       chain): Python {@code str} methods on strings ({@code startswith}, {@code split}, {@code
 *       strip}, ...), shadowing Java's methods of the same name ({@code split} is not a regex);
 *       {@code s[i]} on strings; {@code dict.get}.
 *   <li><b>Output</b> ({@link PyInterpreter#getAsString}): {@code {{ value }}} prints Python's
 *       {@code str(value)}: {@code True}/{@code False}/{@code None}, {@code ['a', 1]}, {@code {'k':
 *       None}}.
 *   <li><b>Whitespace</b>: Jinja2's lstrip_blocks rule ({@link #lstripBlocks}); {@code -} trims
 *       stop at comments.
 *   <li><b>Filters, tests, globals, tags</b>: filters {@code tojson} (Python {@code json.dumps}),
 *       {@code trim}, {@code string}, {@code upper}, {@code lower}, {@code title}, {@code
 *       capitalize}, {@code replace}, {@code join}, {@code length}, {@code count}, {@code items},
 *       {@code default}/{@code d}, {@code sum}, {@code min}, {@code max}, {@code round}; tests
 *       {@code none}, {@code iterable}, {@code sequence}, {@code number}; globals {@code
 *       raise_exception}, {@code strftime_now}, {@code dict}; the {@code generation} block tag.
 * </ul>
 *
 * <p>Sandboxing: templates come from model directories and are untrusted. Template loading ({@code
 * include}/{@code import}/{@code extends}/{@code from}) is disabled and the resource locator refuses
 * everything; nested interpretation (re-rendering of output that contains <code>{{</code>) is off.
 */
final class PyJinjava {

    private PyJinjava() {}

    /** Thrown by {@code raise_exception(msg)}; carries the template's message. */
    static final class RaisedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RaisedException(String message) {
            super(message);
        }
    }

    /** A Python error (TypeError/ValueError/UndefinedError) raised while evaluating a template expression. */
    static final class PyRuntimeError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        PyRuntimeError(String message) {
            super(message);
        }
    }

    /**
     * Python's {@code None}, as distinct from an undefined value (Java null): JSON nulls nested in
     * the data, {@code tools}/{@code documents} when not given, and the {@code none} literal. It is
     * falsy, prints as {@code None}, serialises to {@code null} and is the only value that {@code is
     * none}; an undefined value is not none, as in Jinja2.
     */
    enum PyNone implements HasObjectTruthValue {
        INSTANCE;

        @Override
        public boolean getObjectTruthValue() {
            return false;
        }

        @Override
        public String toString() {
            return "None";
        }
    }

    /** Python truthiness: None/undefined, False, 0, '' and empty containers are false. */
    static boolean truthy(Object o) {
        o = unwrap(o);
        if (o == null || o == PyNone.INSTANCE) {
            return false;
        }
        if (o instanceof Boolean b) {
            return b;
        }
        if (o instanceof Number n) {
            return n.doubleValue() != 0;
        }
        if (o instanceof CharSequence cs) {
            return !cs.isEmpty();
        }
        if (o instanceof Collection<?> c) {
            return !c.isEmpty();
        }
        if (o instanceof Map<?, ?> m) {
            return !m.isEmpty();
        }
        if (o instanceof Object[] a) {
            return a.length > 0;
        }
        if (o instanceof HasObjectTruthValue t) {
            return t.getObjectTruthValue();
        }
        return true;
    }

    /** JUEL's type converter with Python truthiness for {@code not}, {@code and}, {@code or}, ternaries. */
    static final class PyTypeConverter extends TruthyTypeConverter {
        private static final long serialVersionUID = 1L;

        @Override
        protected Boolean coerceToBoolean(Object value) {
            return truthy(value);
        }
    }

    /** {@code {% if %}} / {@code {% elif %}} with Python truthiness (Jinjava: the string "false" is false). */
    static final class PyIfTag extends IfTag {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean isPositiveIfElseNode(TagNode tagNode, JinjavaInterpreter interpreter) {
            return truthy(interpreter.resolveELExpression(tagNode.getHelpers(), tagNode.getLineNumber(),
                    tagNode.getStartPosition()));
        }
    }

    /** The first {@code raise_exception} message of the render running on this thread. */
    static final ThreadLocal<String> RAISED = new ThreadLocal<>();
    /** The first Python-semantics error of the render running on this thread. */
    static final ThreadLocal<String> PY_ERROR = new ThreadLocal<>();
    /** Clock for {@code strftime_now}; replaceable for tests. */
    static volatile Supplier<ZonedDateTime> clock = ZonedDateTime::now;

    static Jinjava create() {
        LegacyOverrides overrides = LegacyOverrides.newBuilder()
                .withEvaluateMapKeys(true)            // {k: v} evaluates k, as in Python
                .withIterateOverMapKeys(true)         // for k in dict -> keys
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
                .withKeepTrailingNewline(true) // Jinja2 strips the template's last newline, not the output's; ChatTemplate does that
                .withNestedInterpretationEnabled(false)
                .withFailOnUnknownTokens(false)
                .withLegacyOverrides(overrides)
                .withElResolver(resolver)
                .withInterperterFactory(new PyInterpreterFactory())
                .withMaxRenderDepth(10)
                .withEnableRecursiveMacroCalls(true)
                .withMaxMacroRecursionDepth(64)
                .withLocale(Locale.ROOT)
                .withDisabled(Map.of(Context.Library.TAG, Set.of("include", "import", "from", "extends")))
                .build();
        Jinjava jinjava = new PyJinjavaApp(config);
        jinjava.setResourceLocator(new NoResources());
        Context g = jinjava.getGlobalContext();
        for (Filter f : filters()) {
            g.registerFilter(f);
        }
        for (ExpTest t : tests()) {
            g.registerExpTest(t);
        }
        g.registerTag(new GenerationTag());
        g.registerTag(new PyIfTag());
        g.registerFunction(function("raise_exception", "raiseException", Object.class));
        g.registerFunction(function("strftime_now", "strftimeNow", Object.class));
        g.registerFunction(function("dict", "dict", Object[].class));
        return jinjava;
    }

    /** A global function backed by a static method here (made accessible: this class is package-private). */
    private static ELFunctionDefinition function(String name, String method, Class<?>... params) {
        try {
            java.lang.reflect.Method m = PyJinjava.class.getDeclaredMethod(method, params);
            m.setAccessible(true);
            return new ELFunctionDefinition("", name, m);
        } catch (NoSuchMethodException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * Jinja2's {@code lstrip_blocks}, applied to the template source: whitespace between the start
     * of a line and a block or comment tag (<code>{%</code>, <code>{#</code>) is removed, unless the
     * tag is <code>{%+</code>/<code>{#+</code>, when the {@code +} is dropped instead. Text inside tags,
     * expressions, comments and {@code raw} blocks is left alone. (Jinjava's own lstrip also strips
     * before tags that follow other content on the same line, which Jinja2 does not.)
     */
    static String lstripBlocks(String src) {
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
                    if (!tail.isEmpty() && tail.chars().allMatch(c -> c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == 0x0b)) {
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
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\{%[-+]?\\s*endraw\\s*[-+]?%}").matcher(src);
        return m.find(from) ? m.start() : src.length();
    }

    // ------------------------------------------------------------------ globals

    /** {@code raise_exception(message)}: aborts the render with the template's message. */
    public static Object raiseException(Object message) {
        String msg = PyStrings.str(message);
        if (RAISED.get() == null) {
            RAISED.set(msg);
        }
        throw new RaisedException(msg);
    }

    /** {@code strftime_now(format)}: the local time, formatted like Python's {@code strftime}. */
    public static String strftimeNow(Object format) {
        return Strftime.format(PyStrings.str(format), clock.get());
    }

    /** {@code dict(k=v, ...)} / {@code dict(mapping)}. */
    public static Object dict(Object... args) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Object a : args == null ? new Object[0] : args) {
            if (a instanceof NamedParameter p) {
                out.put(p.getName(), p.getValue());
            } else if (a instanceof Map<?, ?> m) {
                m.forEach((k, v) -> out.put(String.valueOf(k), v));
            } else if (a != null) {
                throw pyError("dict() positional argument must be a mapping, not " + PyStrings.typeName(a));
            }
        }
        return out;
    }

    static PyRuntimeError pyError(String message) {
        if (PY_ERROR.get() == null) {
            PY_ERROR.set(message);
        }
        return new PyRuntimeError(message);
    }

    // ------------------------------------------------------------------ Jinjava / interpreter

    /** Jinjava whose expression factory builds {@link PyParser}s. */
    static final class PyJinjavaApp extends Jinjava {
        private final ExpressionFactory factory = new ExpressionFactoryImpl(
                new TreeStore(new PyTreeBuilder(Builder.Feature.METHOD_INVOCATIONS, Builder.Feature.VARARGS), new Cache(1000)),
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

    static final class PyInterpreterFactory implements InterpreterFactory {
        @Override
        public JinjavaInterpreter newInstance(JinjavaInterpreter orig) {
            return new PyInterpreter(orig);
        }

        @Override
        public JinjavaInterpreter newInstance(Jinjava application, Context context, JinjavaConfig renderConfig) {
            context.setErrorHandlingStrategy(ErrorHandlingStrategy.builder()
                    .setFatalErrorStrategy(TemplateErrorTypeHandlingStrategy.THROW_EXCEPTION)
                    .setNonFatalErrorStrategy(TemplateErrorTypeHandlingStrategy.ADD_ERROR)
                    .build());
            return new PyInterpreter(application, context, renderConfig);
        }
    }

    /**
     * Parsed templates, by source. Jinjava re-parses on every render; a chat template is rendered
     * once per request, so its tree is kept (nodes are not modified while rendering). Only
     * templates that parsed without any error are kept; the map is bounded by clearing it.
     */
    private static final Map<String, Node> PARSED = new java.util.concurrent.ConcurrentHashMap<>();
    private static final int PARSED_MAX = 256;

    /** Prints values the way Jinja2 does (Python's {@code str()}) and caches parsed templates. */
    static final class PyInterpreter extends JinjavaInterpreter {
        PyInterpreter(Jinjava application, Context context, JinjavaConfig config) {
            super(application, context, config);
        }

        PyInterpreter(JinjavaInterpreter orig) {
            super(orig);
        }

        @Override
        public Node parse(String template) {
            Node cached = PARSED.get(template);
            if (cached != null) {
                return cached;
            }
            int errorsBefore = getErrors().size();
            Node root = super.parse(template);
            if (getErrors().size() == errorsBefore) {
                if (PARSED.size() >= PARSED_MAX) {
                    PARSED.clear();
                }
                PARSED.put(template, root);
            }
            return root;
        }

        @Override
        public String getAsString(Object object) {
            return PyStrings.str(unwrap(object));
        }
    }

    static final class NoResources implements ResourceLocator {
        @Override
        public String getString(String fullName, Charset encoding, JinjavaInterpreter interpreter) {
            throw new SecurityException("chat templates cannot load other templates (" + fullName + ")");
        }
    }

    /** For arguments where Python accepts None as "not given" ({@code split(None)}, {@code s[None:2]}). */
    static Object noneToNull(Object o) {
        o = unwrap(o);
        return o == PyNone.INSTANCE ? null : o;
    }

    static Object unwrap(Object o) {
        if (o instanceof SafeString s) {
            return s.toString();
        }
        if (o == com.hubspot.jinjava.interpret.NullValue.INSTANCE) {
            return null;
        }
        return o;
    }

    // ------------------------------------------------------------------ expression parser

    /** Builds {@link PyParser}s. Public with a (Feature...) constructor, as JUEL expects of builders. */
    public static final class PyTreeBuilder extends ExtendedSyntaxBuilder {
        private static final long serialVersionUID = 1L;

        public PyTreeBuilder(Builder.Feature... features) {
            super(features);
        }

        @Override
        protected Parser createParser(String expression) {
            return new PyParser(this, expression);
        }
    }

    /**
     * Jinjava's parser with Python slices ({@code [start:stop:step]}), Jinja2's precedence for
     * {@code not}, and Python-semantics {@code +}, {@code ~} and {@code *}.
     */
    static final class PyParser extends ExtendedParser {

        PyParser(Builder context, String input) {
            super(context, input);
            putExtensionHandler(StringConcatOperator.TOKEN, new ExtensionHandler(ExtensionPoint.ADD) {
                @Override
                public AstNode createAstNode(AstNode... children) {
                    return new AstBinary(children[0], children[1], PyConcat.OP);
                }
            });
        }

        @Override
        protected Scanner createScanner(String expression) {
            return new PyScanner(expression);
        }

        @Override
        protected AstDot createAstDot(AstNode base, String property, boolean lvalue) {
            return new PyDot(base, property, lvalue);
        }

        @Override
        protected AstBracket createAstBracket(AstNode base, AstNode property, boolean lvalue, boolean strict) {
            return new PyBracket(base, property, lvalue, strict, context.isEnabled(Builder.Feature.IGNORE_RETURN_TYPE));
        }

        @Override
        protected AstBinary createAstBinary(AstNode left, AstNode right, AstBinary.Operator operator) {
            if (operator == AdditionOperator.OP) {
                operator = PyAdd.OP;
            } else if (operator == AstBinary.MUL) {
                operator = PyMul.OP;
            } else if (operator == AstBinary.AND) {
                operator = PyAnd.OP;
            } else if (operator == AstBinary.EQ) {
                operator = PyEq.EQ;
            } else if (operator == AstBinary.NE) {
                operator = PyEq.NE;
            } else if (operator == AstBinary.MOD) {
                operator = PyMod.OP;
            }
            return super.createAstBinary(left, right, operator);
        }

        /**
         * Call arguments; {@code name=expr} keyword arguments take a whole expression ({@code
         * namespace(i=messages|length - 1)}), where Jinjava's '=' operator bound tighter than {@code -}.
         */
        @Override
        protected AstParameters params(Scanner.Symbol left, Scanner.Symbol right) throws Scanner.ScanException, ParseException {
            consumeToken(left);
            List<AstNode> l = new ArrayList<>();
            AstNode v = argument(false);
            if (v != null) {
                l.add(v);
                while (getToken().getSymbol() == Scanner.Symbol.COMMA) {
                    consumeToken();
                    if (getToken().getSymbol() == right) {
                        break; // trailing comma, as Python allows
                    }
                    l.add(argument(true));
                }
            }
            consumeToken(right);
            return createAstParameters(l);
        }

        private AstNode argument(boolean required) throws Scanner.ScanException, ParseException {
            if (getToken().getSymbol() == IDENTIFIER && "=".equals(lookahead(0).getImage())
                    && lookahead(0).getSymbol() == Scanner.Symbol.EXTENSION) {
                String name = consumeToken().getImage();
                consumeToken(); // =
                AstIdentifier id = identifier(name);
                return new AstNamedParameter(id, expr(true));
            }
            return expr(required);
        }

        /** Jinja2: {@code not} applies to a whole comparison ({@code not a in b}, {@code not a == b}). */
        @Override
        protected AstNode eq(boolean required) throws Scanner.ScanException, ParseException {
            if (getToken().getSymbol() == Scanner.Symbol.NOT && "not".equals(getToken().getImage())) {
                consumeToken();
                return createAstUnary(eq(true), AstUnary.NOT);
            }
            return super.eq(required);
        }

        /** Set while parsing the operand of a unary minus: its filters apply to the negated value. */
        private boolean operandOfMinus;

        /** Jinja2: {@code -x|abs} is {@code abs(-x)} (filters and tests apply after the sign). */
        @Override
        protected AstNode unary(boolean required) throws Scanner.ScanException, ParseException {
            boolean applyOperators = !operandOfMinus;
            operandOfMinus = false;
            if (getToken().getSymbol() == Scanner.Symbol.MINUS) {
                consumeToken();
                operandOfMinus = true;
                AstNode operand = unary(true);
                AstNode neg = createAstUnary(operand, AstUnary.NEG);
                return applyOperators ? operators(neg) : neg;
            }
            if (!applyOperators) {
                operandOfMinus = true; // tell value() to leave the filters to the minus
            }
            return super.unary(required);
        }

        /** ExtendedParser.value() with {@code [a:b:c]} slices; the rest is unchanged. */
        @Override
        protected AstNode value() throws Scanner.ScanException, ParseException {
            boolean applyOperators = !operandOfMinus;
            operandOfMinus = false; // nested expressions (arguments, subscripts) parse normally
            boolean lvalue = true;
            AstNode v = nonliteral();
            if (v == null) {
                v = literal();
                if (v == null) {
                    return null;
                }
                lvalue = false;
            }
            while (true) {
                switch (getToken().getSymbol()) {
                    case DOT -> {
                        consumeToken();
                        String name = consumeToken(IDENTIFIER).getImage();
                        AstDot dot = createAstDot(v, name, lvalue);
                        if (getToken().getSymbol() == LPAREN && context.isEnabled(METHOD_INVOCATIONS)) {
                            v = createAstMethod(dot, params());
                        } else {
                            v = dot;
                        }
                    }
                    case LBRACK -> {
                        consumeToken();
                        AstNode start = expr(false);
                        boolean strict = !context.isEnabled(NULL_PROPERTIES);
                        Scanner.Token next = consumeToken();
                        if (next.getSymbol() == COLON) {
                            AstNode stop = getToken().getSymbol() == COLON ? null : expr(false);
                            AstNode step = null;
                            if (getToken().getSymbol() == COLON) {
                                consumeToken();
                                step = expr(false);
                            }
                            consumeToken(RBRACK);
                            v = new PySlice(v, start, stop, step, lvalue, strict);
                        } else if (next.getSymbol() == RBRACK) {
                            AstBracket bracket = createAstBracket(v, start, lvalue, strict);
                            if (getToken().getSymbol() == LPAREN && context.isEnabled(METHOD_INVOCATIONS)) {
                                v = createAstMethod(bracket, params());
                            } else {
                                v = bracket;
                            }
                        } else {
                            fail(RBRACK);
                        }
                    }
                    default -> {
                        return applyOperators ? operators(v) : v;
                    }
                }
            }
        }

        /** ExtendedParser.parseOperators (private there): filters and {@code is} tests after a value. */
        private AstNode operators(AstNode left) throws Scanner.ScanException, ParseException {
            if ("|".equals(getToken().getImage()) && lookahead(0).getSymbol() == IDENTIFIER) {
                return operators(parseFiltersAsNestedMethods(left)); // x|f is none
            }
            if ("is".equals(getToken().getImage()) && "not".equals(lookahead(0).getImage())
                    && isExpTestSymbol(lookahead(1).getSymbol())) {
                consumeToken(); // is
                consumeToken(); // not
                return expTest(left, "evaluateNegated");
            }
            if ("is".equals(getToken().getImage()) && isExpTestSymbol(lookahead(0).getSymbol())) {
                consumeToken(); // is
                return expTest(left, "evaluate");
            }
            return left;
        }

        private static boolean isExpTestSymbol(Scanner.Symbol s) {
            return switch (s) {
                case IDENTIFIER, EQ, NE, LT, LE, GT, GE, TRUE, FALSE -> true;
                default -> s == CollectionMembershipOperator.TOKEN.getSymbol();
            };
        }

        private AstNode expTest(AstNode left, String method) throws Scanner.ScanException, ParseException {
            String name = consumeToken().getImage();
            List<AstNode> params = new ArrayList<>(List.of(left, interpreter()));
            AstNode arg = value();
            if (arg != null) {
                params.add(arg);
            }
            AstProperty test = createAstDot(identifier(EXPTEST_PREFIX + name), method, true);
            return createAstMethod(test, createAstParameters(params));
        }
    }

    /** String literals with Python's escapes: \\n \\t \\xhh \\uXXXX \\UXXXXXXXX \\N{name} \\ooo, unknown ones kept. */
    static final class PyScanner extends com.hubspot.jinjava.el.ext.ExtendedScanner {
        PyScanner(String input) {
            super(input);
        }

        @Override
        protected Scanner.Token nextString() throws Scanner.ScanException {
            builder.setLength(0);
            String in = getInput();
            char quote = in.charAt(getPosition());
            int i = getPosition() + 1;
            int l = in.length();
            while (i < l) {
                char c = in.charAt(i++);
                if (c == quote) {
                    return token(Scanner.Symbol.STRING, builder.toString(), i - getPosition());
                }
                if (c != '\\') {
                    builder.append(c);
                    continue;
                }
                if (i == l) {
                    break;
                }
                char e = in.charAt(i++);
                switch (e) {
                    case '\n' -> { } // line continuation
                    case '\\', '\'', '"' -> builder.append(e);
                    case 'a' -> builder.append('\u0007');
                    case 'b' -> builder.append('\b');
                    case 'f' -> builder.append('\f');
                    case 'n' -> builder.append('\n');
                    case 'r' -> builder.append('\r');
                    case 't' -> builder.append('\t');
                    case 'v' -> builder.append('\u000b');
                    case 'x', 'u', 'U' -> {
                        int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                        if (i + n > l) {
                            throw new Scanner.ScanException(getPosition(), "truncated \\" + e + " escape", n + " hex digits");
                        }
                        try {
                            builder.appendCodePoint(Integer.parseInt(in.substring(i, i + n), 16));
                        } catch (IllegalArgumentException ex) {
                            throw new Scanner.ScanException(getPosition(), "truncated \\" + e + " escape", n + " hex digits");
                        }
                        i += n;
                    }
                    case 'N' -> {
                        int close = in.indexOf('}', i);
                        if (i >= l || in.charAt(i) != '{' || close < 0) {
                            throw new Scanner.ScanException(getPosition(), "malformed \\N character escape", "\\N{name}");
                        }
                        try {
                            builder.appendCodePoint(Character.codePointOf(in.substring(i + 1, close)));
                        } catch (IllegalArgumentException ex) {
                            throw new Scanner.ScanException(getPosition(), "unknown Unicode character name", "\\N{name}");
                        }
                        i = close + 1;
                    }
                    default -> {
                        if (e >= '0' && e <= '7') {
                            int start = i - 1;
                            while (i < l && i - start < 3 && in.charAt(i) >= '0' && in.charAt(i) <= '7') {
                                i++;
                            }
                            builder.appendCodePoint(Integer.parseInt(in.substring(start, i), 8));
                        } else {
                            builder.append('\\').append(e); // Python keeps unknown escapes
                        }
                    }
                }
            }
            throw new Scanner.ScanException(getPosition(), "unterminated string", quote + " or \\");
        }
    }

    /**
     * {@code base.attr} / {@code base[key]} as in Jinja2: on an undefined base it raises
     * (UndefinedError); on None it is undefined; otherwise the EL resolvers decide.
     */
    static Object getItem(AstNode prefix, Object base, Object property, boolean strict, ELContext context) {
        if (base == null) {
            throw pyError("'" + prefix + "' is undefined");
        }
        if (base == PyNone.INSTANCE || (property == null && strict)) {
            return null;
        }
        context.setPropertyResolved(false);
        Object result = context.getELResolver().getValue(context, base, property);
        if (!context.isPropertyResolved()) {
            throw new PropertyNotFoundException("Cannot resolve property '" + property + "' of " + PyStrings.typeName(base));
        }
        return result;
    }

    static final class PyDot extends AstDot {
        PyDot(AstNode base, String property, boolean lvalue) {
            super(base, property, lvalue);
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object base = prefix.eval(bindings, context);
            return getItem(prefix, base, base == null ? null : getProperty(bindings, context), strict, context);
        }
    }

    static final class PyBracket extends AstBracket {
        PyBracket(AstNode base, AstNode property, boolean lvalue, boolean strict, boolean ignoreReturnType) {
            super(base, property, lvalue, strict, ignoreReturnType);
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object base = prefix.eval(bindings, context);
            return getItem(prefix, base, base == null ? null : getProperty(bindings, context), strict, context);
        }
    }

    /** {@code base[start:stop:step]} with Python semantics, for strings (by code point) and sequences. */
    static final class PySlice extends AstRangeBracket {
        private final AstNode step;

        PySlice(AstNode base, AstNode start, AstNode stop, AstNode step, boolean lvalue, boolean strict) {
            super(base, start, stop, lvalue, strict, false);
            this.step = step;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object base = unwrap(prefix.eval(bindings, context));
            if (base == null) {
                throw pyError("cannot slice an undefined value (" + prefix + ")");
            }
            Integer a = index(property, bindings, context);
            Integer b = index(rangeMax, bindings, context);
            Integer s = index(step, bindings, context);
            int st = s == null ? 1 : s;
            if (st == 0) {
                throw pyError("slice step cannot be zero");
            }
            if (base instanceof String str) {
                int[] cps = str.codePoints().toArray();
                StringBuilder out = new StringBuilder();
                for (int i : indices(cps.length, a, b, st)) {
                    out.appendCodePoint(cps[i]);
                }
                return out.toString();
            }
            List<Object> items = new ArrayList<>();
            if (base instanceof Iterable<?> it) {
                it.forEach(items::add);
            } else if (base instanceof Object[] arr) {
                items.addAll(Arrays.asList(arr));
            } else {
                throw pyError("'" + PyStrings.typeName(base) + "' object is not subscriptable");
            }
            List<Object> out = new ArrayList<>();
            for (int i : indices(items.size(), a, b, st)) {
                out.add(items.get(i));
            }
            return new PyList(out);
        }

        private static Integer index(AstNode node, Bindings bindings, ELContext context) {
            if (node == null) {
                return null;
            }
            Object v = noneToNull(node.eval(bindings, context));
            if (v == null) {
                return null;
            }
            if (v instanceof Number n && !(v instanceof Double) && !(v instanceof Float)) {
                return n.intValue();
            }
            throw pyError("slice indices must be integers or None, not " + PyStrings.typeName(v));
        }

        /** Python's slice.indices(len) walked: the selected positions, in order. */
        static int[] indices(int len, Integer start, Integer stop, int step) {
            int lo;
            int hi;
            if (step > 0) {
                lo = start == null ? 0 : clamp(start, len, 0, len);
                hi = stop == null ? len : clamp(stop, len, 0, len);
            } else {
                lo = start == null ? len - 1 : clamp(start, len, -1, len - 1);
                hi = stop == null ? -1 : clamp(stop, len, -1, len - 1);
            }
            List<Integer> out = new ArrayList<>();
            for (int i = lo; step > 0 ? i < hi : i > hi; i += step) {
                out.add(i);
            }
            return out.stream().mapToInt(Integer::intValue).toArray();
        }

        private static int clamp(int i, int len, int min, int max) {
            if (i < 0) {
                i += len;
            }
            return Math.max(min, Math.min(max, i));
        }
    }

    /** Python {@code +}: numbers add, str+str and list+list concatenate, anything else raises. */
    static final class PyAdd implements AstBinary.Operator {
        static final PyAdd OP = new PyAdd();

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            Object a = unwrap(left.eval(bindings, context));
            Object b = unwrap(right.eval(bindings, context));
            if (a instanceof String x && b instanceof String y) {
                return x + y;
            }
            if (a instanceof Collection<?> x && b instanceof Collection<?> y) {
                List<Object> out = new ArrayList<>(x);
                out.addAll(y);
                return new PyList(out);
            }
            if (isNumber(a) && isNumber(b)) {
                return NumberOperations.add(bindings, a, b);
            }
            if (a == null || b == null) {
                throw pyError("undefined value in '+' (the " + (a == null ? "left" : "right")
                        + " operand is undefined; Jinja2 raises UndefinedError)");
            }
            throw pyError("unsupported operand type(s) for +: '" + PyStrings.typeName(a) + "' and '"
                    + PyStrings.typeName(b) + "'");
        }

        @Override
        public String toString() {
            return "+";
        }
    }

    /** Python {@code and}: the left operand if it is falsy, else the right one. */
    static final class PyAnd implements AstBinary.Operator {
        static final PyAnd OP = new PyAnd();

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            Object a = left.eval(bindings, context);
            return truthy(a) ? right.eval(bindings, context) : a;
        }

        @Override
        public String toString() {
            return "&&";
        }
    }

    /** Python {@code ==} / {@code !=}: no string/number coercion; 1 == 1.0 == True; deep for lists and dicts. */
    static final class PyEq implements AstBinary.Operator {
        static final PyEq EQ = new PyEq(false);
        static final PyEq NE = new PyEq(true);
        private final boolean negate;

        private PyEq(boolean negate) {
            this.negate = negate;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            return pyEquals(left.eval(bindings, context), right.eval(bindings, context)) != negate;
        }

        @Override
        public String toString() {
            return negate ? "!=" : "==";
        }
    }

    static boolean pyEquals(Object a, Object b) {
        a = unwrap(a);
        b = unwrap(b);
        if (a == b) {
            return true;
        }
        if (a == null || b == null) {
            return false; // undefined equals only undefined
        }
        if (isNumber(a) && isNumber(b)) {
            return toBigDecimal(a).compareTo(toBigDecimal(b)) == 0;
        }
        if (a instanceof CharSequence x && b instanceof CharSequence y) {
            return x.toString().equals(y.toString());
        }
        if (a instanceof List<?> x && b instanceof List<?> y) {
            if (x.size() != y.size()) {
                return false;
            }
            for (int i = 0; i < x.size(); i++) {
                if (!pyEquals(x.get(i), y.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof Map<?, ?> x && b instanceof Map<?, ?> y) {
            if (x.size() != y.size()) {
                return false;
            }
            for (Map.Entry<?, ?> e : x.entrySet()) {
                if (!y.containsKey(e.getKey()) || !pyEquals(e.getValue(), y.get(e.getKey()))) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }

    private static java.math.BigDecimal toBigDecimal(Object o) {
        if (o instanceof Boolean b) {
            return b ? java.math.BigDecimal.ONE : java.math.BigDecimal.ZERO;
        }
        if (o instanceof java.math.BigDecimal d) {
            return d;
        }
        if (o instanceof java.math.BigInteger i) {
            return new java.math.BigDecimal(i);
        }
        if (o instanceof Double || o instanceof Float) {
            double d = ((Number) o).doubleValue();
            return Double.isFinite(d) ? new java.math.BigDecimal(d) : java.math.BigDecimal.valueOf(Long.MAX_VALUE).multiply(java.math.BigDecimal.TEN.pow(400)).multiply(java.math.BigDecimal.valueOf(Math.signum(d)));
        }
        return java.math.BigDecimal.valueOf(((Number) o).longValue());
    }

    /** Python {@code %} on numbers: the result has the sign of the divisor. */
    static final class PyMod implements AstBinary.Operator {
        static final PyMod OP = new PyMod();

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            Object a = unwrap(left.eval(bindings, context));
            Object b = unwrap(right.eval(bindings, context));
            if (!isNumber(a) || !isNumber(b)) {
                throw pyError("unsupported operand type(s) for %: '" + PyStrings.typeName(a) + "' and '"
                        + PyStrings.typeName(b) + "' (%-formatting is not supported)");
            }
            if (isIntegral(a) && isIntegral(b)) {
                long y = ((Number) toNumber(b)).longValue();
                if (y == 0) {
                    throw pyError("integer modulo by zero");
                }
                return Math.floorMod(((Number) toNumber(a)).longValue(), y);
            }
            double x = ((Number) toNumber(a)).doubleValue();
            double y = ((Number) toNumber(b)).doubleValue();
            if (y == 0) {
                throw pyError("float modulo");
            }
            double m = x % y;
            return m != 0 && (m < 0) != (y < 0) ? m + y : m;
        }

        @Override
        public String toString() {
            return "%";
        }
    }

    static boolean isIntegral(Object o) {
        return o instanceof Boolean || o instanceof Integer || o instanceof Long || o instanceof Short
                || o instanceof Byte || o instanceof java.math.BigInteger;
    }

    static Object toNumber(Object o) {
        return o instanceof Boolean b ? (b ? 1L : 0L) : o;
    }

    static boolean isNumber(Object o) {
        return o instanceof Number || o instanceof Boolean;
    }

    /** Jinja2 {@code ~}: {@code str(a) + str(b)} (undefined is ''). */
    static final class PyConcat extends AstBinary.SimpleOperator {
        static final PyConcat OP = new PyConcat();

        @Override
        protected Object apply(jinjava.de.odysseus.el.misc.TypeConverter converter, Object a, Object b) {
            return PyStrings.str(unwrap(a)) + PyStrings.str(unwrap(b));
        }

        @Override
        public String toString() {
            return "~";
        }
    }

    /** Python {@code *}: {@code str * int} / {@code list * int} repeat, numbers multiply. */
    static final class PyMul implements AstBinary.Operator {
        static final PyMul OP = new PyMul();

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            Object a = unwrap(left.eval(bindings, context));
            Object b = unwrap(right.eval(bindings, context));
            if (a instanceof String s && isInt(b)) {
                return s.repeat(Math.max(0, ((Number) b).intValue()));
            }
            if (b instanceof String s && isInt(a)) {
                return s.repeat(Math.max(0, ((Number) a).intValue()));
            }
            if (a instanceof Collection<?> c && isInt(b)) {
                List<Object> out = new ArrayList<>();
                for (int i = 0; i < ((Number) b).intValue(); i++) {
                    out.addAll(c);
                }
                return new PyList(out);
            }
            if (isNumber(a) && isNumber(b)) {
                return NumberOperations.mul(bindings, a, b);
            }
            throw pyError("unsupported operand type(s) for *: '" + PyStrings.typeName(a) + "' and '"
                    + PyStrings.typeName(b) + "'");
        }

        private static boolean isInt(Object o) {
            return o instanceof Integer || o instanceof Long || o instanceof Short || o instanceof Byte;
        }

        @Override
        public String toString() {
            return "*";
        }
    }

    // ------------------------------------------------------------------ str methods

    /** Resolves {@code "text".method(args)} to Python's {@code str} methods. */
    static final class PyMethodResolver extends ELResolver {

        @Override
        public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
            if (!(method instanceof String name)) {
                return null;
            }
            Object b = base instanceof SafeString ss ? ss.toString() : base;
            if (b instanceof Map<?, ?> map && name.equals("get")) {
                // dict.get(key, default=None): Python's None for a missing key, not undefined
                Args args = new Args(name, params);
                Object key = args.req(0, "key", 2);
                Object v = map.get(key);
                if (v == null && key != null && !(key instanceof String)) {
                    v = map.get(String.valueOf(key));
                }
                context.setPropertyResolved(true);
                if (v != null) {
                    return v;
                }
                Object dflt = args.get(1, "default", 2);
                return dflt != null ? dflt : PyNone.INSTANCE;
            }
            if (!(b instanceof String s)) {
                return null;
            }
            Args args = new Args(name, params);
            Object result;
            try {
                result = stringMethod(s, name, args);
            } catch (PyStrings.PyError e) {
                throw pyError(e.getMessage());
            }
            if (result == NOT_A_METHOD) {
                return null;
            }
            context.setPropertyResolved(true);
            return result;
        }

        private static final Object NOT_A_METHOD = new Object();

        private static Object stringMethod(String s, String name, Args a) {
            return switch (name) {
                case "strip" -> PyStrings.strip(s, a.optStr(0, "chars", 1));
                case "lstrip" -> PyStrings.lstrip(s, a.optStr(0, "chars", 1));
                case "rstrip" -> PyStrings.rstrip(s, a.optStr(0, "chars", 1));
                case "split" -> new PyList(new ArrayList<>(PyStrings.split(s, a.optStr(0, "sep", 2), a.optInt(1, "maxsplit", -1))));
                case "rsplit" -> new PyList(new ArrayList<>(PyStrings.rsplit(s, a.optStr(0, "sep", 2), a.optInt(1, "maxsplit", -1))));
                case "splitlines" -> new PyList(new ArrayList<>(PyStrings.splitlines(s, a.optBool(0, "keepends", false, 1))));
                case "startswith" -> PyStrings.startswith(s, a.req(0, "prefix", 3), a.optInteger(1, "start"), a.optInteger(2, "end"));
                case "endswith" -> PyStrings.endswith(s, a.req(0, "suffix", 3), a.optInteger(1, "start"), a.optInteger(2, "end"));
                case "upper" -> {
                    a.none();
                    yield PyStrings.upper(s);
                }
                case "lower", "casefold" -> {
                    a.none();
                    yield PyStrings.lower(s);
                }
                case "title" -> {
                    a.none();
                    yield PyStrings.title(s);
                }
                case "capitalize" -> {
                    a.none();
                    yield PyStrings.capitalize(s);
                }
                case "swapcase" -> {
                    a.none();
                    yield PyStrings.swapcase(s);
                }
                case "replace" -> PyStrings.replace(s, a.reqStr(0, "old", 3), a.reqStr(1, "new", 3), a.optInt(2, "count", -1));
                case "find" -> PyStrings.find(s, a.reqStr(0, "sub", 3), a.optInteger(1, "start"), a.optInteger(2, "end"), false);
                case "rfind" -> PyStrings.find(s, a.reqStr(0, "sub", 3), a.optInteger(1, "start"), a.optInteger(2, "end"), true);
                case "index", "rindex" -> {
                    int i = PyStrings.find(s, a.reqStr(0, "sub", 3), a.optInteger(1, "start"), a.optInteger(2, "end"), name.equals("rindex"));
                    if (i < 0) {
                        throw new PyStrings.PyError("substring not found");
                    }
                    yield i;
                }
                case "count" -> PyStrings.count(s, a.reqStr(0, "sub", 3), a.optInteger(1, "start"), a.optInteger(2, "end"));
                case "join" -> PyStrings.join(s, a.req(0, "iterable", 1));
                case "removeprefix" -> {
                    String p = a.reqStr(0, "prefix", 1);
                    yield s.startsWith(p) ? s.substring(p.length()) : s;
                }
                case "removesuffix" -> {
                    String p = a.reqStr(0, "suffix", 1);
                    yield !p.isEmpty() && s.endsWith(p) ? s.substring(0, s.length() - p.length()) : s;
                }
                case "isspace" -> {
                    a.none();
                    yield PyStrings.allCodePoints(s, PyStrings::isSpace);
                }
                case "isdigit", "isdecimal", "isnumeric" -> {
                    a.none();
                    yield PyStrings.allCodePoints(s, Character::isDigit);
                }
                case "isalpha" -> {
                    a.none();
                    yield PyStrings.allCodePoints(s, Character::isLetter);
                }
                case "isalnum" -> {
                    a.none();
                    yield PyStrings.allCodePoints(s, Character::isLetterOrDigit);
                }
                case "islower" -> {
                    a.none();
                    yield PyStrings.isLower(s);
                }
                case "isupper" -> {
                    a.none();
                    yield PyStrings.isUpper(s);
                }
                default -> NOT_A_METHOD;
            };
        }

        @Override
        public Class<?> getCommonPropertyType(ELContext context, Object base) {
            return null;
        }

        @Override
        public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
            return null;
        }

        @Override
        public Class<?> getType(ELContext context, Object base, Object property) {
            return null;
        }

        /** {@code 'abc'[1]}, {@code 'abc'[-1]} by code point; other attributes of a str are undefined. */
        @Override
        public Object getValue(ELContext context, Object base, Object property) {
            Object b = base instanceof SafeString ss ? ss.toString() : base;
            if (!(b instanceof String s)) {
                return null;
            }
            context.setPropertyResolved(true);
            String p = String.valueOf(property);
            if (!p.matches("-?\\d{1,9}")) {
                return null;
            }
            int i = Integer.parseInt(p);
            int n = s.codePointCount(0, s.length());
            if (i < 0) {
                i += n;
            }
            if (i < 0 || i >= n) {
                return null;
            }
            int at = s.offsetByCodePoints(0, i);
            return new String(Character.toChars(s.codePointAt(at)));
        }

        @Override
        public boolean isReadOnly(ELContext context, Object base, Object property) {
            return false;
        }

        @Override
        public void setValue(ELContext context, Object base, Object property, Object value) {
            // read-only: nothing to set
        }
    }

    /** Positional + keyword arguments of a Python method call, checked like CPython does. */
    static final class Args {
        private final String method;
        private final List<Object> positional = new ArrayList<>();
        private final Map<String, Object> named = new LinkedHashMap<>();
        private final List<Object> rawPositional = new ArrayList<>();
        private final Map<String, Object> rawNamed = new LinkedHashMap<>();

        Args(String method, Object[] params) {
            this.method = method;
            for (Object p : params == null ? new Object[0] : params) {
                if (p instanceof NamedParameter np) {
                    named.put(np.getName(), noneToNull(np.getValue()));
                    rawNamed.put(np.getName(), unwrap(np.getValue()));
                } else {
                    positional.add(noneToNull(p));
                    rawPositional.add(unwrap(p));
                }
            }
        }

        void none() {
            if (!positional.isEmpty() || !named.isEmpty()) {
                throw new PyStrings.PyError("str." + method + "() takes no arguments (" + (positional.size() + named.size()) + " given)");
            }
        }

        private Object get(int i, String name, int max) {
            if (positional.size() > max) {
                throw new PyStrings.PyError("str." + method + "() takes at most " + max + " arguments (" + positional.size() + " given)");
            }
            if (i < positional.size()) {
                return positional.get(i);
            }
            return named.get(name);
        }

        /** The argument as passed (None stays None). */
        Object rawGet(int i, String name) {
            return i < rawPositional.size() ? rawPositional.get(i) : rawNamed.get(name);
        }

        Object req(int i, String name, int max) {
            if (i >= positional.size() && !named.containsKey(name)) {
                throw new PyStrings.PyError("str." + method + "() missing required argument '" + name + "'");
            }
            return get(i, name, max);
        }

        String reqStr(int i, String name, int max) {
            Object o = req(i, name, max);
            if (!(o instanceof String s)) {
                throw new PyStrings.PyError("str." + method + "() argument '" + name + "' must be str, not " + PyStrings.typeName(o));
            }
            return s;
        }

        String optStr(int i, String name, int max) {
            Object o = get(i, name, max);
            if (o != null && !(o instanceof String)) {
                throw new PyStrings.PyError("str." + method + "() argument '" + name + "' must be str or None, not " + PyStrings.typeName(o));
            }
            return (String) o;
        }

        int optInt(int i, String name, int dflt) {
            Integer v = optInteger(i, name);
            return v == null ? dflt : v;
        }

        Integer optInteger(int i, String name) {
            Object o = get(i, name, Integer.MAX_VALUE);
            if (o == null) {
                return null;
            }
            if (o instanceof Number n && !(o instanceof Double) && !(o instanceof Float)) {
                return n.intValue();
            }
            throw new PyStrings.PyError("str." + method + "() argument '" + name + "' must be an integer, not " + PyStrings.typeName(o));
        }

        boolean optBool(int i, String name, boolean dflt, int max) {
            Object o = get(i, name, max);
            return o == null ? dflt : o instanceof Boolean b ? b : o instanceof Number n ? n.doubleValue() != 0 : true;
        }
    }

    // ------------------------------------------------------------------ filters

    /** A filter with Python-style positional + keyword arguments. */
    abstract static class PyFilter implements Filter {
        private final String name;

        PyFilter(String name) {
            this.name = name;
        }

        @Override
        public String getName() {
            return name;
        }

        abstract Object apply(Object value, Args args);

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            Object[] all = new Object[(args == null ? 0 : args.length) + kwargs.size()];
            int k = 0;
            if (args != null) {
                for (Object a : args) {
                    all[k++] = a;
                }
            }
            for (Map.Entry<String, Object> e : kwargs.entrySet()) {
                all[k++] = new NamedParameter(e.getKey(), e.getValue());
            }
            try {
                return apply(unwrap(var), new Args(name, all));
            } catch (PyStrings.PyError e) {
                throw pyError(e.getMessage());
            }
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            return filter(var, interpreter, args, Map.of());
        }

        @Override
        public boolean preserveSafeString() {
            return false;
        }
    }

    static List<Filter> filters() {
        List<Filter> f = new ArrayList<>();
        f.add(new PyFilter("tojson") {
            @Override
            Object apply(Object value, Args a) {
                Object indent = a.get(0, "indent", 4);
                Object seps = a.get(2, "separators", 4);
                String[] separators = null;
                if (seps instanceof List<?> l && l.size() == 2) {
                    separators = new String[] {PyStrings.str(l.get(0)), PyStrings.str(l.get(1))};
                }
                Object sort = a.get(3, "sort_keys", 4);
                return PyStrings.jsonDumps(plain(value), indent, separators, Boolean.TRUE.equals(sort));
            }
        });
        f.add(new PyFilter("trim") {
            @Override
            Object apply(Object value, Args a) {
                return PyStrings.strip(PyStrings.str(value), a.optStr(0, "chars", 1));
            }
        });
        f.add(new PyFilter("string") {
            @Override
            Object apply(Object value, Args a) {
                return PyStrings.str(value);
            }
        });
        f.add(new PyFilter("upper") {
            @Override
            Object apply(Object value, Args a) {
                return PyStrings.upper(PyStrings.str(value));
            }
        });
        f.add(new PyFilter("lower") {
            @Override
            Object apply(Object value, Args a) {
                return PyStrings.lower(PyStrings.str(value));
            }
        });
        f.add(new PyFilter("title") {
            @Override
            Object apply(Object value, Args a) {
                return PyStrings.title(PyStrings.str(value));
            }
        });
        f.add(new PyFilter("capitalize") {
            @Override
            Object apply(Object value, Args a) {
                return PyStrings.capitalize(PyStrings.str(value));
            }
        });
        f.add(new PyFilter("replace") {
            @Override
            Object apply(Object value, Args a) {
                Integer count = a.optInteger(2, "count");
                return PyStrings.replace(PyStrings.str(value), PyStrings.str(a.req(0, "old", 3)),
                        PyStrings.str(a.req(1, "new", 3)), count == null ? -1 : count);
            }
        });
        f.add(new PyFilter("join") {
            @Override
            Object apply(Object value, Args a) {
                String sep = PyStrings.str(a.get(0, "d", 2));
                Object attribute = a.get(1, "attribute", 2);
                StringBuilder b = new StringBuilder();
                boolean first = true;
                for (Object o : PyStrings.iterable(value)) {
                    if (!first) {
                        b.append(sep);
                    }
                    first = false;
                    Object item = attribute == null ? o : o instanceof Map<?, ?> m ? m.get(PyStrings.str(attribute)) : null;
                    b.append(PyStrings.str(unwrap(item)));
                }
                return b.toString();
            }
        });
        for (String name : List.of("length", "count")) {
            f.add(new PyFilter(name) {
                @Override
                Object apply(Object value, Args a) {
                    if (value instanceof String s) {
                        return s.codePointCount(0, s.length());
                    }
                    if (value instanceof Map<?, ?> m) {
                        return m.size();
                    }
                    if (value instanceof Collection<?> c) {
                        return c.size();
                    }
                    if (value instanceof Object[] arr) {
                        return arr.length;
                    }
                    if (value == null) {
                        return 0; // Jinja2: len(Undefined) == 0
                    }
                    throw new PyStrings.PyError("object of type '" + PyStrings.typeName(value) + "' has no len()");
                }
            });
        }
        f.add(new PyFilter("sum") {
            @Override
            Object apply(Object value, Args a) {
                Object attribute = a.get(0, "attribute", 2);
                Object total = a.get(1, "start", 2);
                total = total == null ? 0L : total;
                boolean integral = isIntegral(total);
                double dsum = ((Number) toNumber(total)).doubleValue();
                long lsum = integral ? ((Number) toNumber(total)).longValue() : 0;
                for (Object o : PyStrings.iterable(value)) {
                    Object x = unwrap(attribute == null ? o : o instanceof Map<?, ?> m ? m.get(PyStrings.str(attribute)) : null);
                    if (!isNumber(x)) {
                        throw new PyStrings.PyError("unsupported operand type(s) for +: 'int' and '" + PyStrings.typeName(x) + "'");
                    }
                    if (integral && isIntegral(x)) {
                        lsum += ((Number) toNumber(x)).longValue();
                        dsum = lsum;
                    } else {
                        integral = false;
                        dsum += ((Number) toNumber(x)).doubleValue();
                    }
                }
                return integral ? (Object) lsum : (Object) dsum;
            }
        });
        for (String name : List.of("min", "max")) {
            f.add(new PyFilter(name) {
                @Override
                Object apply(Object value, Args a) {
                    boolean caseSensitive = Boolean.TRUE.equals(a.get(0, "case_sensitive", 2));
                    Object attribute = a.get(1, "attribute", 2);
                    Object best = null;
                    Object bestKey = null;
                    for (Object o : PyStrings.iterable(value)) {
                        Object x = unwrap(attribute == null ? o : o instanceof Map<?, ?> m ? m.get(PyStrings.str(attribute)) : null);
                        Object key = !caseSensitive && x instanceof String str ? PyStrings.lower(str) : x;
                        if (best == null || (name.equals("min") ? compare(key, bestKey) < 0 : compare(key, bestKey) > 0)) {
                            best = unwrap(o);
                            bestKey = key;
                        }
                    }
                    return best; // empty: undefined, as in Jinja2
                }
            });
        }
        f.add(new PyFilter("round") {
            @Override
            Object apply(Object value, Args a) {
                Object p = a.get(0, "precision", 2);
                int precision = p == null ? 0 : ((Number) p).intValue();
                String method = a.get(1, "method", 2) == null ? "common" : PyStrings.str(a.get(1, "method", 2));
                Object v = toNumber(value);
                if (!(v instanceof Number n)) {
                    throw new PyStrings.PyError("round() needs a number, not " + PyStrings.typeName(value));
                }
                java.math.RoundingMode mode = switch (method) {
                    case "common" -> java.math.RoundingMode.HALF_EVEN; // Python's round()
                    case "floor" -> java.math.RoundingMode.FLOOR;
                    case "ceil" -> java.math.RoundingMode.CEILING;
                    default -> throw new PyStrings.PyError("method must be common, ceil or floor");
                };
                if (isIntegral(v)) {
                    return n.longValue(); // Python: round(int, n) is the int
                }
                return new java.math.BigDecimal(n.doubleValue()).setScale(precision, mode).doubleValue();
            }
        });
        for (String name : List.of("default", "d")) {
            f.add(new PyFilter(name) {
                @Override
                Object apply(Object value, Args a) {
                    boolean bool = Boolean.TRUE.equals(a.get(1, "boolean", 2));
                    if (value == null || (bool && !truthy(value))) {
                        Object d = a.rawGet(0, "default_value");
                        return d == null ? "" : d;
                    }
                    return value;
                }
            });
        }
        f.add(new PyFilter("items") {
            @Override
            Object apply(Object value, Args a) {
                if (value == null) {
                    return new PyList(new ArrayList<>());
                }
                if (!(value instanceof Map<?, ?> m)) {
                    throw new PyStrings.PyError("Can only get item pairs from a mapping.");
                }
                List<Object> out = new ArrayList<>();
                m.forEach((k, v) -> out.add(new PyList(new ArrayList<>(Arrays.asList(k, v)))));
                return new PyList(out);
            }
        });
        return f;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static int compare(Object a, Object b) {
        if (isNumber(a) && isNumber(b)) {
            return toBigDecimal(a).compareTo(toBigDecimal(b));
        }
        if (a instanceof String x && b instanceof String y) {
            return x.compareTo(y);
        }
        if (a instanceof Comparable x && b != null && a.getClass() == b.getClass()) {
            return x.compareTo(b);
        }
        throw new PyStrings.PyError("'<' not supported between instances of '" + PyStrings.typeName(a) + "' and '"
                + PyStrings.typeName(b) + "'");
    }

    /** Deep copy into plain maps / lists / scalars, for json.dumps. */
    static Object plain(Object o) {
        o = unwrap(o);
        if (o instanceof Map<?, ?> m) {
            Map<Object, Object> out = new LinkedHashMap<>();
            m.forEach((k, v) -> out.put(unwrap(k), plain(v)));
            return out;
        }
        if (o instanceof Map.Entry<?, ?> e) {
            return Arrays.asList(plain(e.getKey()), plain(e.getValue()));
        }
        if (o instanceof Iterable<?> it) {
            List<Object> out = new ArrayList<>();
            it.forEach(x -> out.add(plain(x)));
            return out;
        }
        if (o instanceof Object[] arr) {
            List<Object> out = new ArrayList<>();
            for (Object x : arr) {
                out.add(plain(x));
            }
            return out;
        }
        return o;
    }

    // ------------------------------------------------------------------ tests

    abstract static class PyTest implements ExpTest {
        private final String name;

        PyTest(String name) {
            this.name = name;
        }

        @Override
        public String getName() {
            return name;
        }
    }

    static List<ExpTest> tests() {
        List<ExpTest> t = new ArrayList<>();
        for (String name : List.of("iterable", "sequence")) {
            t.add(new PyTest(name) {
                @Override
                public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
                    Object v = unwrap(var);
                    // Jinja2's Undefined iterates as empty and has len(), so it is iterable and a sequence
                    return v == null || v instanceof String || v instanceof Map || v instanceof Iterable
                            || v instanceof Object[];
                }
            });
        }
        t.add(new PyTest("none") {
            @Override
            public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
                return var == PyNone.INSTANCE;
            }
        });
        t.add(new PyTest("number") {
            @Override
            public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
                return isNumber(unwrap(var));
            }
        });
        return t;
    }

    // ------------------------------------------------------------------ {% generation %}

    /**
     * transformers' {@code {% generation %}...{% endgeneration %}} (AssistantTracker): marks the
     * assistant's tokens for {@code return_assistant_tokens_mask}; when rendering text it just
     * renders its body, which is all this tag does.
     */
    static final class GenerationTag implements Tag {
        private static final long serialVersionUID = 1L;

        @Override
        public String getName() {
            return "generation";
        }

        @Override
        public String interpret(TagNode tagNode, JinjavaInterpreter interpreter) {
            StringBuilder out = new StringBuilder();
            for (Node child : tagNode.getChildren()) {
                out.append(child.render(interpreter).getValue());
            }
            return out.toString();
        }
    }

    // ------------------------------------------------------------------ strftime

    /** The subset of C strftime that chat templates use, in the C/English locale. */
    static final class Strftime {
        private static final String[] DAYS = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
        private static final String[] MONTHS = {"January", "February", "March", "April", "May", "June", "July",
            "August", "September", "October", "November", "December"};

        static String format(String fmt, ZonedDateTime t) {
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < fmt.length(); i++) {
                char c = fmt.charAt(i);
                if (c != '%' || i + 1 >= fmt.length()) {
                    b.append(c);
                    continue;
                }
                char d = fmt.charAt(++i);
                String day = DAYS[t.getDayOfWeek().getValue() - 1];
                String month = MONTHS[t.getMonthValue() - 1];
                switch (d) {
                    case 'Y' -> b.append(t.getYear());
                    case 'y' -> b.append(String.format("%02d", t.getYear() % 100));
                    case 'm' -> b.append(String.format("%02d", t.getMonthValue()));
                    case 'd' -> b.append(String.format("%02d", t.getDayOfMonth()));
                    case 'e' -> b.append(String.format("%2d", t.getDayOfMonth()));
                    case 'H' -> b.append(String.format("%02d", t.getHour()));
                    case 'I' -> b.append(String.format("%02d", (t.getHour() + 11) % 12 + 1));
                    case 'M' -> b.append(String.format("%02d", t.getMinute()));
                    case 'S' -> b.append(String.format("%02d", t.getSecond()));
                    case 'p' -> b.append(t.getHour() < 12 ? "AM" : "PM");
                    case 'A' -> b.append(day);
                    case 'a' -> b.append(day, 0, 3);
                    case 'B' -> b.append(month);
                    case 'b', 'h' -> b.append(month, 0, 3);
                    case 'j' -> b.append(String.format("%03d", t.getDayOfYear()));
                    case 'w' -> b.append(t.getDayOfWeek().getValue() % 7);
                    case 'u' -> b.append(t.getDayOfWeek().getValue());
                    case 'F' -> b.append(String.format("%d-%02d-%02d", t.getYear(), t.getMonthValue(), t.getDayOfMonth()));
                    case 'T' -> b.append(String.format("%02d:%02d:%02d", t.getHour(), t.getMinute(), t.getSecond()));
                    case 'D' -> b.append(String.format("%02d/%02d/%02d", t.getMonthValue(), t.getDayOfMonth(), t.getYear() % 100));
                    case '%' -> b.append('%');
                    default -> throw pyError("strftime_now: unsupported format directive %" + d);
                }
            }
            return b.toString();
        }
    }
}
