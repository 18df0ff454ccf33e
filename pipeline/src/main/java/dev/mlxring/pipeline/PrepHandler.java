package dev.mlxring.pipeline;

import com.lmax.disruptor.EventHandler;

/**
 * One prep shard: handles the request-ring slots whose sequence maps to it ({@code seq % shards}),
 * so tokenization runs in parallel while ring order is kept. Input: a session in CREATED, its
 * prompt prepared already where the submitter prepared it. Output: the session with {@code
 * prepared} set, or {@code failure} set.
 */
final class PrepHandler implements EventHandler<RequestEvent> {
    private final Preparer preparer;
    private final int shard;
    private final int shards;

    PrepHandler(Preparer preparer, int shard, int shards) {
        this.preparer = preparer;
        this.shard = shard;
        this.shards = shards;
    }

    @Override
    public void onEvent(RequestEvent event, long sequence, boolean endOfBatch) {
        if (sequence % shards != shard) {
            return;
        }
        Session s = event.session;
        if (s.isCancelRequested() || !s.advanceTo(Lifecycle.PREPARING)) {
            return;
        }
        s.stamp(Session.Stage.PREP);
        try {
            if (s.prepared == null) { // else prepared before submission (Engine#submit with a prompt)
                s.prepared = preparer.prepare(s.request());
            }
        } catch (RequestException e) {
            s.failure = Outcome.failed(e.type(), e.getMessage(), Usage.NONE);
        } catch (RuntimeException | StackOverflowError e) {
            // A deeply nested template or message can overflow the stack: one request's problem.
            s.failure = Outcome.failed(Outcome.ErrorType.INTERNAL, "prompt preparation failed: " + e, Usage.NONE);
        }
    }

    /** The stage's {@link StageExceptionHandler} action: plan settles the failed session. */
    static void failEvent(RequestEvent event, Throwable ex) {
        Session s = event.session;
        if (s != null && s.failure == null) {
            s.failure = Outcome.failed(
                    Outcome.ErrorType.INTERNAL, StageExceptionHandler.describe("prompt preparation", ex), Usage.NONE);
        }
    }
}
