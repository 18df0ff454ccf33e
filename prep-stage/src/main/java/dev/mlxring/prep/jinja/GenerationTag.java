package dev.mlxring.prep.jinja;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;

/**
 * transformers' {@code {% generation %}...{% endgeneration %}} (AssistantTracker): marks the
 * assistant's tokens for {@code return_assistant_tokens_mask}; when rendering text it just
 * renders its body, which is all this tag does.
 */
final class GenerationTag implements Tag {
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
