package dev.mlxring.pipeline;

/**
 * A token-ring slot, written by the exec thread and read by the sink thread. Preallocated; the
 * top-logprob arrays are sized once for the largest allowed request.
 */
final class TokenEvent {
    static final int TOKEN = 0;
    static final int TERMINAL = 1;

    Session session;
    int kind;
    int token;
    float logprob;
    final int[] topIds;
    final float[] topLogprobs;
    int topCount;
    Outcome outcome;
    /** When exec published this token ({@link System#nanoTime()}). */
    long publishedNs;

    TokenEvent(int maxTopLogprobs) {
        topIds = new int[maxTopLogprobs];
        topLogprobs = new float[maxTopLogprobs];
    }
}
