package dev.mlxring.pipeline;

import com.lmax.disruptor.ExceptionHandler;
import java.util.function.BiConsumer;

/**
 * The Disruptor exception handler of one stage: whatever escapes a handler's own request-level
 * catches (an {@link Error} such as a stack overflow in a template, a bug) fails the one session
 * of that event and the stage thread carries on with the next event. Disruptor's default,
 * {@code FatalExceptionHandler}, would end the stage thread and with it every later request.
 *
 * <p>Concurrency: called on the stage's own thread, for the event it was handling; the event's
 * session is still attached. {@code failSession} must not throw; if it does anyway, the failure
 * is logged and swallowed, so the stage thread survives in every case.
 */
final class StageExceptionHandler<T> implements ExceptionHandler<T> {
    private static final System.Logger LOG = System.getLogger(StageExceptionHandler.class.getName());

    private final String stage;
    private final BiConsumer<T, Throwable> failSession;

    StageExceptionHandler(String stage, BiConsumer<T, Throwable> failSession) {
        this.stage = stage;
        this.failSession = failSession;
    }

    @Override
    public void handleEventException(Throwable ex, long sequence, T event) {
        LOG.log(
                System.Logger.Level.ERROR,
                "stage " + stage + " failed on event " + sequence + "; failing that request and continuing",
                ex);
        try {
            failSession.accept(event, ex);
        } catch (Throwable second) {
            LOG.log(
                    System.Logger.Level.ERROR,
                    "stage " + stage + " could not fail the request of event " + sequence,
                    second);
        }
    }

    @Override
    public void handleOnStartException(Throwable ex) {
        LOG.log(System.Logger.Level.ERROR, "stage " + stage + " failed to start", ex);
    }

    @Override
    public void handleOnShutdownException(Throwable ex) {
        LOG.log(System.Logger.Level.ERROR, "stage " + stage + " failed to shut down", ex);
    }

    /** The message a client sees: the stage and the exception, never a stack trace. */
    static String describe(String stage, Throwable ex) {
        return stage + " failed: " + ex;
    }
}
