package dev.mlxring.prep.jinja;

import static dev.mlxring.prep.jinja.JinjaValues.unwrap;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.ContextConfigurationIF.ErrorHandlingStrategyIF.TemplateErrorTypeHandlingStrategy;
import com.hubspot.jinjava.interpret.ErrorHandlingStrategy;
import com.hubspot.jinjava.interpret.InterpreterFactory;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.tree.Node;
import java.util.Map;

/** Jinjava's interpreter that prints values the way Jinja2 does (Python's {@code str()}) and caches parsed templates. */
final class PyInterpreter extends JinjavaInterpreter {

    /**
     * Parsed templates, by source. Jinjava re-parses on every render; a chat template is rendered
     * once per request, so its tree is kept (nodes are not modified while rendering). Only
     * templates that parsed without any error are kept; the map is bounded by clearing it.
     */
    private static final Map<String, Node> PARSED = new java.util.concurrent.ConcurrentHashMap<>();

    private static final int PARSED_MAX = 256;

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
        return JinjaValues.str(unwrap(object));
    }

    /** Makes {@link PyInterpreter}s; fatal template errors throw, others are collected for the caller. */
    static final class Factory implements InterpreterFactory {
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
}
