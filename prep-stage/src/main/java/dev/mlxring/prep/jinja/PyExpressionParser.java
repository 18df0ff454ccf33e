package dev.mlxring.prep.jinja;

import static jinjava.de.odysseus.el.tree.impl.Builder.Feature.METHOD_INVOCATIONS;
import static jinjava.de.odysseus.el.tree.impl.Builder.Feature.NULL_PROPERTIES;
import static jinjava.de.odysseus.el.tree.impl.Scanner.Symbol.COLON;
import static jinjava.de.odysseus.el.tree.impl.Scanner.Symbol.DOT;
import static jinjava.de.odysseus.el.tree.impl.Scanner.Symbol.IDENTIFIER;
import static jinjava.de.odysseus.el.tree.impl.Scanner.Symbol.LPAREN;
import static jinjava.de.odysseus.el.tree.impl.Scanner.Symbol.RBRACK;

import com.hubspot.jinjava.el.ExtendedSyntaxBuilder;
import com.hubspot.jinjava.el.ext.AdditionOperator;
import com.hubspot.jinjava.el.ext.AstNamedParameter;
import com.hubspot.jinjava.el.ext.CollectionMembershipOperator;
import com.hubspot.jinjava.el.ext.ExtendedParser;
import com.hubspot.jinjava.el.ext.StringConcatOperator;
import dev.mlxring.prep.jinja.PyAccess.PyBracket;
import dev.mlxring.prep.jinja.PyAccess.PyDot;
import dev.mlxring.prep.jinja.PyAccess.PySlice;
import dev.mlxring.prep.jinja.PyOperators.PyAdd;
import dev.mlxring.prep.jinja.PyOperators.PyAnd;
import dev.mlxring.prep.jinja.PyOperators.PyConcat;
import dev.mlxring.prep.jinja.PyOperators.PyEq;
import dev.mlxring.prep.jinja.PyOperators.PyMod;
import dev.mlxring.prep.jinja.PyOperators.PyMul;
import dev.mlxring.pycompat.PyError;
import dev.mlxring.pycompat.PyEscapes;
import java.util.ArrayList;
import java.util.List;
import jinjava.de.odysseus.el.tree.impl.Builder;
import jinjava.de.odysseus.el.tree.impl.Parser;
import jinjava.de.odysseus.el.tree.impl.Scanner;
import jinjava.de.odysseus.el.tree.impl.ast.AstBinary;
import jinjava.de.odysseus.el.tree.impl.ast.AstBracket;
import jinjava.de.odysseus.el.tree.impl.ast.AstDot;
import jinjava.de.odysseus.el.tree.impl.ast.AstIdentifier;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.de.odysseus.el.tree.impl.ast.AstParameters;
import jinjava.de.odysseus.el.tree.impl.ast.AstProperty;
import jinjava.de.odysseus.el.tree.impl.ast.AstUnary;

/**
 * Jinja2's expression grammar on top of Jinjava's JUEL parser: Python slices with a step ({@code
 * messages[::-1]}), {@code not} binding looser than comparisons ({@code not a in b}), {@code -x|f}
 * as {@code f(-x)}, {@code x|f is test}, keyword arguments taking whole expressions ({@code
 * namespace(i=messages|length - 1)}), Python escapes in string literals, and the operators and
 * access nodes of {@link PyOperators} and {@link PyAccess} in place of JUEL's.
 */
final class PyExpressionParser {

    private PyExpressionParser() {}

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
        protected AstParameters params(Scanner.Symbol left, Scanner.Symbol right)
                throws Scanner.ScanException, ParseException {
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
            if (getToken().getSymbol() == IDENTIFIER
                    && "=".equals(lookahead(0).getImage())
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
            if (getToken().getSymbol() == Scanner.Symbol.NOT
                    && "not".equals(getToken().getImage())) {
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
            if ("is".equals(getToken().getImage())
                    && "not".equals(lookahead(0).getImage())
                    && isExpTestSymbol(lookahead(1).getSymbol())) {
                consumeToken(); // is
                consumeToken(); // not
                return expTest(left, "evaluateNegated");
            }
            if ("is".equals(getToken().getImage())
                    && isExpTestSymbol(lookahead(0).getSymbol())) {
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

    /** String literals with Python's escapes ({@link PyEscapes}), as Jinja2's lexer decodes them. */
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
                try {
                    i = PyEscapes.decode(in, i, builder);
                } catch (PyError e) {
                    throw new Scanner.ScanException(getPosition(), e.getMessage(), "a Python escape");
                }
            }
            throw new Scanner.ScanException(getPosition(), "unterminated string", quote + " or \\");
        }
    }
}
