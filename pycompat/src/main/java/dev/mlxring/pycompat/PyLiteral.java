package dev.mlxring.pycompat;

import java.math.BigInteger;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The subset of CPython 3.11's parser that mlx-lm's tool parsers reach through
 * {@code ast.literal_eval} (qwen3_coder, pythonic) and {@code ast.parse(..., mode="eval")} of a
 * {@code [f(a=1), g.h(b="x")]} list (pythonic). Anything it does not accept is a {@link Fail},
 * which the parsers treat like Python's SyntaxError / ValueError (both are caught there, with the
 * same outcome).
 *
 * <p>Covered: int (decimal with the 4300-digit limit, hex, octal, binary, underscores), float
 * (incl. {@code 1.}, {@code .5}, exponents, overflow to inf), str (quotes, triple quotes, prefixes
 * r/u, implicit concatenation, every escape incl. {@code \N{NAME}} through Java's Unicode names),
 * True / False / None, tuples (as lists, like {@code json.dumps}), lists, dicts with str keys,
 * unary +/- on numbers, comments, line continuations, implicit line joining, blank leading lines,
 * NFKC-normalised identifiers, and (pythonic) JSON's true / false / null as names.
 *
 * <p>Known gaps, all treated as a failure (so qwen3_coder keeps the raw string, pythonic falls
 * back to its regex) where Python would produce a value that {@code json.dumps} cannot serialise
 * or that a JSON object cannot hold: bytes, complex numbers ({@code 1j}, {@code 1+2j}), sets and
 * {@code set()}, Ellipsis, dicts with non-str keys (Python would stringify int / float / bool /
 * None keys and merge equal ones such as 1 and True). {@code \N{...}} knows no name aliases;
 * identifier characters follow Java's Unicode tables (XID_Start / XID_Continue approximated by
 * {@code Character.isUnicodeIdentifierStart / Part}). Python raises RecursionError (uncaught by
 * mlx-lm) on very deep nesting; here that is a failure too.
 */
public final class PyLiteral {
    /** Python raised SyntaxError / ValueError (or a construct outside this subset). */
    public static final class Fail extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Fail(String msg) {
            super(msg, null, false, false);
        }
    }

    private static final Set<String> KEYWORDS = Set.of(
            "False",
            "None",
            "True",
            "and",
            "as",
            "assert",
            "async",
            "await",
            "break",
            "class",
            "continue",
            "def",
            "del",
            "elif",
            "else",
            "except",
            "finally",
            "for",
            "from",
            "global",
            "if",
            "import",
            "in",
            "is",
            "lambda",
            "nonlocal",
            "not",
            "or",
            "pass",
            "raise",
            "return",
            "try",
            "while",
            "with",
            "yield");

    private static final Pattern NUMBER = Pattern.compile("0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+"
            + "|(?:[0-9](?:_?[0-9])*(?:\\.(?:[0-9](?:_?[0-9])*)?)?|\\.[0-9](?:_?[0-9])*)"
            + "(?:[eE][+-]?[0-9](?:_?[0-9])*)?");

    private static final int MAX_DEPTH = 200;

    private static final int K_NUM = 0; // an int or float Constant (what a unary sign may take)
    private static final int K_CONST = 1; // any other Constant
    private static final int K_OTHER = 2;

    private record Val(Object value, int kind) {}

    /** One {@code name(key=literal, ...)} of a call list: the dotted name and the keyword arguments in order. */
    public record KeywordCall(String name, Map<String, Object> arguments) {}

    private final String src;
    private final boolean jsonNames;
    private int pos;
    private int depth;

    private PyLiteral(String src, boolean jsonNames) {
        for (int i = 0; i < src.length(); i++) {
            char c = src.charAt(i);
            if (c == 0) {
                throw new Fail("source code string cannot contain null bytes");
            }
            if (Character.isSurrogate(c)) {
                if (Character.isHighSurrogate(c)
                        && i + 1 < src.length()
                        && Character.isLowSurrogate(src.charAt(i + 1))) {
                    i++;
                } else {
                    throw new Fail("UnicodeEncodeError: surrogates not allowed");
                }
            }
        }
        // The tokenizer reads \r\n and \r as \n.
        this.src = src.indexOf('\r') < 0 ? src : src.replace("\r\n", "\n").replace('\r', '\n');
        this.jsonNames = jsonNames;
    }

    /** {@code ast.literal_eval(s)} for a str. */
    public static Object literalEval(String s) {
        int a = 0;
        while (a < s.length() && (s.charAt(a) == ' ' || s.charAt(a) == '\t')) {
            a++;
        }
        PyLiteral p = new PyLiteral(s.substring(a), false);
        p.startOfInput();
        Val v = p.value();
        p.skip();
        if (p.peek() == ',') {
            // A bare tuple: "1, 2".
            List<Object> items = new ArrayList<>();
            items.add(v.value());
            while (p.peek() == ',') {
                p.pos++;
                p.skip();
                if (p.atEndOfLine()) {
                    break;
                }
                items.add(p.value().value());
                p.skip();
            }
            v = new Val(items, K_OTHER);
        }
        p.endOfInput();
        return v.value();
    }

    /**
     * pythonic's {@code _parse_pythonic_tool_call} after {@code ast.parse}: the calls of a
     * {@code [name(kw=literal, ...), ...]} list, or null where Python returns None or raises.
     */
    public static List<KeywordCall> callList(String s) {
        try {
            PyLiteral p = new PyLiteral(s, true);
            p.startOfInput();
            if (p.peek() != '[') {
                return null;
            }
            p.pos++;
            p.depth++;
            p.skip();
            List<KeywordCall> calls = new ArrayList<>();
            if (p.peek() == ']') {
                return null; // an empty list: None
            }
            while (true) {
                calls.add(p.call());
                p.skip();
                char c = p.peek();
                if (c == ',') {
                    p.pos++;
                    p.skip();
                    if (p.peek() == ']') {
                        break;
                    }
                } else if (c == ']') {
                    break;
                } else {
                    return null;
                }
            }
            p.pos++;
            p.depth--;
            p.endOfInput();
            return calls;
        } catch (Fail | IllegalArgumentException e) {
            return null;
        }
    }

    // ---------------------------------------------------------------------------------------
    // Layout

    private char peek() {
        return pos < src.length() ? src.charAt(pos) : '\0';
    }

    private boolean atEnd() {
        return pos >= src.length();
    }

    private boolean atEndOfLine() {
        return atEnd() || (depth == 0 && peek() == '\n');
    }

    /** Blank and comment lines may lead; the first real line may not be indented. */
    private void startOfInput() {
        while (true) {
            boolean indented = false;
            while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\f')) {
                indented |= peek() != '\f';
                pos++;
            }
            if (peek() == '#') {
                while (!atEnd() && peek() != '\n') {
                    pos++;
                }
            }
            if (atEnd()) {
                throw new Fail("unexpected EOF");
            }
            if (peek() == '\n') {
                pos++;
                continue;
            }
            if (indented) {
                throw new Fail("unexpected indent");
            }
            return;
        }
    }

    /** Whitespace, comments and continuations; newlines too inside brackets. */
    private void skip() {
        while (!atEnd()) {
            char c = peek();
            if (c == ' ' || c == '\t' || c == '\f') {
                pos++;
            } else if (c == '#') {
                while (!atEnd() && peek() != '\n') {
                    pos++;
                }
            } else if (c == '\n' && depth > 0) {
                pos++;
            } else if (c == '\\') {
                if (pos + 1 < src.length() && src.charAt(pos + 1) == '\n' && pos + 2 < src.length()) {
                    pos += 2;
                } else {
                    throw new Fail("unexpected character after line continuation character");
                }
            } else {
                return;
            }
        }
    }

    /** After the expression only blank lines and comments may follow. */
    private void endOfInput() {
        while (true) {
            skip();
            if (atEnd()) {
                return;
            }
            if (peek() != '\n') {
                throw new Fail("invalid syntax");
            }
            pos++;
        }
    }

    // ---------------------------------------------------------------------------------------
    // Expressions

    private KeywordCall call() {
        skip();
        StringBuilder name = new StringBuilder(identifier());
        skip();
        while (peek() == '.') {
            pos++;
            skip();
            name.append('.').append(identifier());
            skip();
        }
        if (peek() != '(') {
            throw new Fail("not a call");
        }
        pos++;
        depth++;
        Map<String, Object> args = new LinkedHashMap<>();
        skip();
        while (peek() != ')') {
            String key = identifier();
            skip();
            if (peek() != '=' || (pos + 1 < src.length() && src.charAt(pos + 1) == '=')) {
                throw new Fail("positional argument");
            }
            pos++;
            args.put(key, value().value());
            skip();
            if (peek() == ',') {
                pos++;
                skip();
            } else if (peek() != ')') {
                throw new Fail("invalid syntax");
            }
        }
        pos++;
        depth--;
        return new KeywordCall(name.toString(), args);
    }

    /** A NAME token that is no keyword, NFKC-normalised as the AST holds it. */
    private String identifier() {
        String raw = rawIdentifier();
        if (raw == null || KEYWORDS.contains(raw)) {
            throw new Fail("expected a name");
        }
        return nfkc(raw);
    }

    private static String nfkc(String raw) {
        for (int i = 0; i < raw.length(); i++) {
            if (raw.charAt(i) >= 0x80) {
                return Normalizer.normalize(raw, Normalizer.Form.NFKC);
            }
        }
        return raw;
    }

    private static boolean idStart(int cp) {
        return cp == '_' || (cp < 0x80 ? Character.isLetter(cp) : Character.isUnicodeIdentifierStart(cp));
    }

    private static boolean idPart(int cp) {
        if (cp < 0x80) {
            return cp == '_' || Character.isLetterOrDigit(cp);
        }
        return Character.isUnicodeIdentifierPart(cp) && !Character.isIdentifierIgnorable(cp);
    }

    private String rawIdentifier() {
        if (atEnd()) {
            return null;
        }
        int start = pos;
        int cp = src.codePointAt(pos);
        if (!idStart(cp)) {
            return null;
        }
        pos += Character.charCount(cp);
        while (!atEnd()) {
            cp = src.codePointAt(pos);
            if (!idPart(cp)) {
                break;
            }
            pos += Character.charCount(cp);
        }
        return src.substring(start, pos);
    }

    private Val value() {
        skip();
        char c = peek();
        if (c == '-' || c == '+') {
            pos++;
            skip();
            Val operand = atom();
            if (operand.kind() != K_NUM) {
                throw new Fail("malformed node or string");
            }
            Object v = operand.value();
            if (c == '+') {
                return new Val(v, K_OTHER);
            }
            if (v instanceof Double d) {
                return new Val(-d, K_OTHER);
            }
            return new Val(PyNumbers.pyInt(PyNumbers.toBig((Number) v).negate()), K_OTHER);
        }
        return atom();
    }

    private Val atom() {
        skip();
        if (atEnd()) {
            throw new Fail("unexpected EOF");
        }
        char c = peek();
        switch (c) {
            case '(': {
                enter();
                skip();
                if (peek() == ')') {
                    pos++;
                    depth--;
                    return new Val(new ArrayList<>(), K_OTHER);
                }
                Val first = value();
                skip();
                if (peek() == ')') {
                    pos++;
                    depth--;
                    return first;
                }
                List<Object> items = new ArrayList<>();
                items.add(first.value());
                sequenceTail(items, ')');
                return new Val(items, K_OTHER);
            }
            case '[': {
                enter();
                skip();
                List<Object> items = new ArrayList<>();
                if (peek() == ']') {
                    pos++;
                    depth--;
                    return new Val(items, K_OTHER);
                }
                items.add(value().value());
                skip();
                if (peek() == ']') {
                    pos++;
                    depth--;
                    return new Val(items, K_OTHER);
                }
                sequenceTail(items, ']');
                return new Val(items, K_OTHER);
            }
            case '{': {
                enter();
                skip();
                Map<String, Object> map = new LinkedHashMap<>();
                if (peek() == '}') {
                    pos++;
                    depth--;
                    return new Val(map, K_OTHER);
                }
                while (true) {
                    Val key = value();
                    skip();
                    if (peek() != ':') {
                        throw new Fail("set literal (unsupported: json.dumps cannot serialise a set)");
                    }
                    pos++;
                    Object v = value().value();
                    if (!(key.value() instanceof String k)) {
                        throw new Fail("dict key that is not a str (unsupported)");
                    }
                    map.put(k, v);
                    skip();
                    if (peek() == ',') {
                        pos++;
                        skip();
                        if (peek() == '}') {
                            break;
                        }
                    } else if (peek() == '}') {
                        break;
                    } else {
                        throw new Fail("invalid syntax");
                    }
                }
                pos++;
                depth--;
                return new Val(map, K_OTHER);
            }
            case '"', '\'':
                return strings();
            default:
                break;
        }
        if ((c >= '0' && c <= '9')
                || (c == '.'
                        && pos + 1 < src.length()
                        && Character.isDigit(src.charAt(pos + 1))
                        && src.charAt(pos + 1) < 0x80)) {
            return number();
        }
        int save = pos;
        String raw = rawIdentifier();
        if (raw == null) {
            throw new Fail("invalid syntax");
        }
        if (!atEnd() && (peek() == '"' || peek() == '\'') && isStringPrefix(raw)) {
            pos = save;
            return strings();
        }
        switch (raw) {
            case "True":
                return new Val(Boolean.TRUE, K_CONST);
            case "False":
                return new Val(Boolean.FALSE, K_CONST);
            case "None":
                return new Val(null, K_CONST);
            default:
                break;
        }
        if (KEYWORDS.contains(raw)) {
            throw new Fail("invalid syntax");
        }
        if (jsonNames) {
            switch (nfkc(raw)) {
                case "true":
                    return new Val(Boolean.TRUE, K_CONST);
                case "false":
                    return new Val(Boolean.FALSE, K_CONST);
                case "null":
                    return new Val(null, K_CONST);
                default:
                    break;
            }
        }
        throw new Fail("malformed node or string: Name");
    }

    private void enter() {
        if (++depth > MAX_DEPTH) {
            throw new Fail("too deeply nested");
        }
        pos++;
    }

    /** After the first item and before a comma: the rest of a tuple or list. */
    private void sequenceTail(List<Object> items, char close) {
        while (true) {
            skip();
            if (peek() == close) {
                break;
            }
            if (peek() != ',') {
                throw new Fail("invalid syntax");
            }
            pos++;
            skip();
            if (peek() == close) {
                break;
            }
            items.add(value().value());
        }
        pos++;
        depth--;
    }

    // ---------------------------------------------------------------------------------------
    // Tokens

    private Val number() {
        Matcher m = NUMBER.matcher(src).region(pos, src.length());
        if (!m.lookingAt()) {
            throw new Fail("invalid decimal literal");
        }
        String tok = m.group();
        pos = m.end();
        if (!atEnd()) {
            int cp = src.codePointAt(pos);
            if (cp == 'j' || cp == 'J') {
                throw new Fail("complex literal (unsupported: json.dumps cannot serialise complex)");
            }
            if (idPart(cp)) {
                throw new Fail("invalid decimal literal");
            }
        }
        String t = tok.replace("_", "");
        if (t.length() > 1 && t.charAt(0) == '0' && "xXoObB".indexOf(t.charAt(1)) >= 0) {
            int radix = switch (Character.toLowerCase(t.charAt(1))) {
                case 'x' -> 16;
                case 'o' -> 8;
                default -> 2;
            };
            return new Val(PyNumbers.pyInt(new BigInteger(t.substring(2), radix)), K_NUM);
        }
        if (t.indexOf('.') >= 0 || t.indexOf('e') >= 0 || t.indexOf('E') >= 0) {
            return new Val(Double.parseDouble(t), K_NUM);
        }
        if (t.length() > 1 && t.charAt(0) == '0' && !t.chars().allMatch(ch -> ch == '0')) {
            throw new Fail("leading zeros in decimal integer literals are not permitted");
        }
        if (t.length() > PyNumbers.INT_MAX_STR_DIGITS) {
            throw new Fail("Exceeds the limit (4300 digits) for integer string conversion");
        }
        return new Val(PyNumbers.pyInt(new BigInteger(t)), K_NUM);
    }

    private static boolean isStringPrefix(String p) {
        return switch (p.toLowerCase()) {
            case "r", "u", "b", "br", "rb", "f", "fr", "rf" -> true;
            default -> false;
        };
    }

    /** One or more adjacent string literals (concatenated). */
    private Val strings() {
        StringBuilder out = new StringBuilder();
        while (true) {
            int save = pos;
            String prefix = "";
            if (peek() != '"' && peek() != '\'') {
                String raw = rawIdentifier();
                if (raw == null || atEnd() || (peek() != '"' && peek() != '\'') || !isStringPrefix(raw)) {
                    pos = save;
                    break;
                }
                prefix = raw.toLowerCase();
            }
            if (prefix.indexOf('b') >= 0) {
                throw new Fail("bytes literal (unsupported: json.dumps cannot serialise bytes)");
            }
            if (prefix.indexOf('f') >= 0) {
                throw new Fail("malformed node or string: JoinedStr");
            }
            stringBody(out, prefix.indexOf('r') >= 0);
            int afterString = pos;
            skip();
            if (atEnd() || !(peek() == '"' || peek() == '\'' || idStart(src.codePointAt(pos)))) {
                pos = afterString;
                break;
            }
        }
        return new Val(out.toString(), K_CONST);
    }

    private void stringBody(StringBuilder out, boolean raw) {
        char q = peek();
        boolean triple = src.startsWith(String.valueOf(q).repeat(3), pos);
        pos += triple ? 3 : 1;
        while (true) {
            if (atEnd()) {
                throw new Fail("unterminated string literal");
            }
            char c = src.charAt(pos);
            if (c == q && (!triple || src.startsWith(String.valueOf(q).repeat(3), pos))) {
                pos += triple ? 3 : 1;
                return;
            }
            if (c == '\n' && !triple) {
                throw new Fail("unterminated string literal");
            }
            if (c != '\\') {
                out.append(c);
                pos++;
                continue;
            }
            if (pos + 1 >= src.length()) {
                throw new Fail("unterminated string literal");
            }
            char e = src.charAt(pos + 1);
            pos += 2;
            if (raw) {
                out.append('\\').append(e);
                continue;
            }
            try {
                pos = PyEscapes.decode(src, pos - 1, out);
            } catch (PyError ex) {
                throw new Fail(ex.getMessage());
            }
        }
    }
}
