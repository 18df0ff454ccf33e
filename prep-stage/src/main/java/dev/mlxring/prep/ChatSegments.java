package dev.mlxring.prep;

import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.PromptSegment;
import dev.mlxring.pipeline.PromptSegment.Kind;
import java.util.ArrayList;
import java.util.List;

/**
 * A chat prompt's segments as mlx_lm.server 0.32.2's {@code _tokenize} finds them, for the prefix
 * cache's snapshots at chat boundaries: the system prompt (the ids the prompt shares with the
 * leading system messages rendered before an empty user message), the conversation after it, and
 * a tail from a thinking start marker among the last 11 ids. A prompt whose last message is not
 * the user's is not split (one assistant segment), as there.
 *
 * <p>Stateless.
 */
final class ChatSegments {
    /** How far back from the end {@code _tokenize} looks for the thinking start ({@code len - 11}). */
    static final int THINK_TAIL_WINDOW = 11;

    private ChatSegments() {}

    /**
     * @param systemTokens the leading system messages and an empty user message rendered without
     *     the generation prompt, encoded as the prompt is; null when there are no system messages
     * @param thinkStart the thinking start marker's ids; null when the model has none
     */
    static List<PromptSegment> split(int[] prompt, boolean lastIsUser, int[] systemTokens, int[] thinkStart) {
        if (!lastIsUser) {
            return PreparedPrompt.whole(prompt.length);
        }
        List<PromptSegment> out = new ArrayList<>(3);
        int sysEnd = 0;
        if (systemTokens != null) {
            // zip(sys_tokens, prompt): the first position where they differ; none found leaves 0
            for (int i = 0; i < Math.min(systemTokens.length, prompt.length); i++) {
                if (systemTokens[i] != prompt[i]) {
                    sysEnd = i;
                    break;
                }
            }
            if (sysEnd > 0 && sysEnd < prompt.length) {
                out.add(new PromptSegment(sysEnd, Kind.SYSTEM));
            }
        }
        int tailStart = prompt.length;
        if (thinkStart != null && thinkStart.length > 0) {
            // Not before the system segment's end: mlx-lm would then feed the overlap twice.
            int at = rfind(prompt, thinkStart, Math.max(prompt.length - THINK_TAIL_WINDOW, sysEnd));
            if (at >= 0) {
                tailStart = at;
            }
        }
        if (sysEnd < tailStart) {
            out.add(new PromptSegment(tailStart - sysEnd, Kind.USER));
        }
        if (tailStart < prompt.length) {
            out.add(new PromptSegment(prompt.length - tailStart, Kind.ASSISTANT));
        }
        return out.isEmpty() ? PreparedPrompt.whole(prompt.length) : out;
    }

    /** The last start of {@code seq} in {@code tokens} at or after {@code from}, or -1 ({@code _find(reverse=True)}). */
    static int rfind(int[] tokens, int[] seq, int from) {
        outer:
        for (int i = tokens.length - seq.length; i >= from; i--) {
            for (int j = 0; j < seq.length; j++) {
                if (tokens[i + j] != seq[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
