package dev.mlxring.exec.sample;

import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * mlx-lm's {@code make_logits_processors}: in this order, logit bias, repetition penalty,
 * presence penalty, frequency penalty, each only when set (bias non-empty, penalty != 0), each
 * built from the MLX ops the Python processor runs.
 */
public final class LogitsProcessors {
    private LogitsProcessors() {}

    public static List<LogitsProcessor> make(SamplingParams p) {
        List<LogitsProcessor> out = new ArrayList<>(4);
        if (!p.logitBias().isEmpty()) {
            out.add(new LogitBias(p.logitBias()));
        }
        if (p.repetitionPenalty() != 0) {
            out.add(new RepetitionPenalty(p.repetitionPenalty(), p.repetitionContextSize()));
        }
        if (p.presencePenalty() != 0) {
            out.add(new PresencePenalty(p.presencePenalty(), p.presenceContextSize()));
        }
        if (p.frequencyPenalty() != 0) {
            out.add(new FrequencyPenalty(p.frequencyPenalty(), p.frequencyContextSize()));
        }
        return out;
    }

    /** {@code logits.at[:, indices].add(values)}, indices int32 and values float32 as mx.array(list) makes them. */
    static final class LogitBias implements LogitsProcessor {
        private final int[] ids;
        private final float[] values;

        LogitBias(Map<Integer, Double> bias) {
            ids = new int[bias.size()];
            values = new float[bias.size()];
            int i = 0;
            for (Map.Entry<Integer, Double> e : bias.entrySet()) {
                ids[i] = e.getKey();
                values[i] = (float) (double) e.getValue();
                i++;
            }
        }

        int[] ids() {
            return ids.clone();
        }

        @Override
        public MlxArray apply(MlxArray tokens, int historyLength, MlxArray logits) {
            return Columns.add(logits, Mlx.fromInts(ids, ids.length), Mlx.fromFloats(values, values.length));
        }

        @Override
        public int contextSize() {
            return -1;
        }
    }

    /**
     * A penalty over the last {@code contextSize} tokens of the history (mlx-lm's three
     * {@code make_*_penalty} processors share this frame): nothing before the first token,
     * otherwise {@link #penalize} over the window's token ids.
     */
    abstract static sealed class HistoryPenalty implements LogitsProcessor
            permits RepetitionPenalty, PresencePenalty, FrequencyPenalty {
        final double penalty;
        private final int contextSize;

        HistoryPenalty(double penalty, int contextSize) {
            this.penalty = penalty;
            this.contextSize = contextSize;
        }

        @Override
        public final MlxArray apply(MlxArray tokens, int historyLength, MlxArray logits) {
            if (historyLength == 0) {
                return logits;
            }
            return penalize(Columns.lastTokens(tokens, historyLength, contextSize), logits);
        }

        /** The penalised logits, given the window's token ids {@code t}. */
        abstract MlxArray penalize(MlxArray t, MlxArray logits);

        @Override
        public final int contextSize() {
            return contextSize;
        }
    }

    /** Sign-aware multiplicative penalty on the last {@code contextSize} tokens (make_repetition_penalty). */
    static final class RepetitionPenalty extends HistoryPenalty {
        RepetitionPenalty(double penalty, int contextSize) {
            super(requireNonNegative(penalty), contextSize);
        }

        private static double requireNonNegative(double penalty) {
            if (penalty < 0) {
                throw new IllegalArgumentException("penalty must be a non-negative float, got " + penalty);
            }
            return penalty;
        }

        @Override
        MlxArray penalize(MlxArray t, MlxArray logits) {
            MlxArray selected = Columns.get(logits, t);
            MlxArray p = Columns.pyFloat(penalty, selected.dtype());
            selected = Mlx.where(
                    Mlx.less(selected, Mlx.scalar(0, selected.dtype())),
                    Mlx.multiply(selected, p),
                    Mlx.divide(selected, p));
            return Columns.set(logits, t, selected);
        }
    }

    /** {@code logits[:, tokens] -= penalty} on the last {@code contextSize} tokens (make_presence_penalty). */
    static final class PresencePenalty extends HistoryPenalty {
        PresencePenalty(double penalty, int contextSize) {
            super(penalty, contextSize);
        }

        @Override
        MlxArray penalize(MlxArray t, MlxArray logits) {
            MlxArray selected = Columns.get(logits, t);
            selected = Mlx.subtract(selected, Columns.pyFloat(penalty, selected.dtype()));
            return Columns.set(logits, t, selected);
        }
    }

    /** {@code logits.at[:, tokens].subtract(penalty)}: once per occurrence (make_frequency_penalty). */
    static final class FrequencyPenalty extends HistoryPenalty {
        FrequencyPenalty(double penalty, int contextSize) {
            super(penalty, contextSize);
        }

        @Override
        MlxArray penalize(MlxArray t, MlxArray logits) {
            return Columns.subtract(logits, t, Columns.pyFloat(penalty, logits.dtype()));
        }
    }
}
