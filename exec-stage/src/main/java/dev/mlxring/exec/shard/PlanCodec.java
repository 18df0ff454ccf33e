package dev.mlxring.exec.shard;

import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.PromptSegment;
import dev.mlxring.pipeline.SamplingParams;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An {@link ExecutionPlan} as the other ranks need it: everything the executor reads (prompt
 * ids and segments, the resolved {@link SamplingParams} bit for bit, max tokens, stop ids, logprobs, the KV
 * scheme). Stop strings and tools are the sink's, which runs on rank 0 only, so they do not
 * travel. Doubles go as their raw bits, so a follower samples with exactly rank 0's settings.
 */
final class PlanCodec {
    private PlanCodec() {}

    static void write(DataOutputStream out, ExecutionPlan plan) throws IOException {
        out.writeUTF(plan.requestId() == null ? "" : plan.requestId());
        writeInts(out, plan.prompt().tokenIds());
        out.writeInt(plan.prompt().stablePrefixLength());
        out.writeBoolean(plan.prompt().chatTemplated());
        // The segments decide where a batched row's chunks stop and its snapshots are taken, so
        // every rank's prefix cache makes the same reuse decisions only if they travel too.
        List<PromptSegment> segments = plan.prompt().segments();
        out.writeInt(segments.size());
        for (PromptSegment seg : segments) {
            out.writeInt(seg.length());
            out.writeByte(seg.kind().ordinal());
        }
        out.writeInt(plan.maxTokens());
        writeInts(out, plan.stopTokenIds());
        out.writeBoolean(plan.logprobs());
        out.writeInt(plan.topLogprobs());
        KvQuantization q = plan.kvScheme();
        out.writeBoolean(q != null);
        if (q != null) {
            out.writeInt(q.bits());
            out.writeInt(q.groupSize());
            out.writeInt(q.quantizedKvStart());
        }
        writeSampling(out, plan.sampling());
    }

    static ExecutionPlan read(DataInputStream in) throws IOException {
        String id = in.readUTF();
        int[] ids = readInts(in);
        int stable = in.readInt();
        boolean templated = in.readBoolean();
        List<PromptSegment> segments = readSegments(in);
        int maxTokens = in.readInt();
        int[] stops = readInts(in);
        boolean logprobs = in.readBoolean();
        int top = in.readInt();
        KvQuantization kv = in.readBoolean() ? new KvQuantization(in.readInt(), in.readInt(), in.readInt()) : null;
        SamplingParams sampling = readSampling(in);
        return ExecutionPlan.builder()
                .requestId(id)
                .prompt(new PreparedPrompt(ids, stable, templated, segments))
                .sampling(sampling)
                .maxTokens(maxTokens)
                .stopTokenIds(stops)
                .logprobs(logprobs)
                .topLogprobs(top)
                .kvScheme(kv)
                .build();
    }

    private static void writeSampling(DataOutputStream out, SamplingParams s) throws IOException {
        out.writeDouble(s.temperature());
        out.writeDouble(s.topP());
        out.writeDouble(s.minP());
        out.writeInt(s.minTokensToKeep());
        out.writeInt(s.topK());
        out.writeDouble(s.xtcProbability());
        out.writeDouble(s.xtcThreshold());
        writeInts(out, s.xtcSpecialTokens());
        out.writeInt(s.logitBias().size());
        for (Map.Entry<Integer, Double> e : s.logitBias().entrySet()) {
            out.writeInt(e.getKey());
            out.writeDouble(e.getValue());
        }
        out.writeDouble(s.repetitionPenalty());
        out.writeInt(s.repetitionContextSize());
        out.writeDouble(s.presencePenalty());
        out.writeInt(s.presenceContextSize());
        out.writeDouble(s.frequencyPenalty());
        out.writeInt(s.frequencyContextSize());
        out.writeBoolean(s.seed() != null);
        out.writeLong(s.seed() == null ? 0 : s.seed());
        out.writeBoolean(s.logprobs());
        out.writeInt(s.topLogprobs());
    }

    private static SamplingParams readSampling(DataInputStream in) throws IOException {
        SamplingParams.Builder b = SamplingParams.builder()
                .temperature(in.readDouble())
                .topP(in.readDouble())
                .minP(in.readDouble())
                .minTokensToKeep(in.readInt())
                .topK(in.readInt())
                .xtcProbability(in.readDouble())
                .xtcThreshold(in.readDouble())
                .xtcSpecialTokens(readInts(in));
        int biases = in.readInt();
        Map<Integer, Double> bias = new LinkedHashMap<>();
        for (int i = 0; i < biases; i++) {
            bias.put(in.readInt(), in.readDouble());
        }
        b.logitBias(bias)
                .repetitionPenalty(in.readDouble())
                .repetitionContextSize(in.readInt())
                .presencePenalty(in.readDouble())
                .presenceContextSize(in.readInt())
                .frequencyPenalty(in.readDouble())
                .frequencyContextSize(in.readInt());
        boolean seeded = in.readBoolean();
        long seed = in.readLong();
        return b.seed(seeded ? seed : null)
                .logprobs(in.readBoolean())
                .topLogprobs(in.readInt())
                .build();
    }

    private static List<PromptSegment> readSegments(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > Frame.MAX_PAYLOAD_BYTES / 5) {
            throw new IOException("a segment list of " + n + " entries");
        }
        PromptSegment.Kind[] kinds = PromptSegment.Kind.values();
        List<PromptSegment> segments = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int length = in.readInt();
            int kind = in.readUnsignedByte();
            if (kind >= kinds.length) {
                throw new IOException("a segment of unknown kind " + kind);
            }
            segments.add(new PromptSegment(length, kinds[kind]));
        }
        return segments;
    }

    private static void writeInts(DataOutputStream out, int[] values) throws IOException {
        out.writeInt(values.length);
        for (int v : values) {
            out.writeInt(v);
        }
    }

    private static int[] readInts(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > Frame.MAX_PAYLOAD_BYTES / 4) {
            throw new IOException("an id list of " + n + " entries");
        }
        int[] values = new int[n];
        for (int i = 0; i < n; i++) {
            values[i] = in.readInt();
        }
        return values;
    }
}
