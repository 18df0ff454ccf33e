package dev.mlxring.ingress.http;

/**
 * Admits a request by its peak memory before it is submitted: either a {@link Reservation} held
 * until the request settles, or an {@link ApiError} (400 when it could never fit, 503 with
 * {@code Retry-After} when it does not fit now). Thread-safe.
 */
public interface Admission {
    /** Admits everything; reserves nothing. */
    Admission UNBOUNDED = new Admission() {
        @Override
        public boolean needsPromptTokens() {
            return false;
        }

        @Override
        public Reservation admit(int promptTokens, int maxTokens) {
            return Reservation.NONE;
        }
    };

    /** Whether {@link #admit} reads its prompt token count (else it is passed as 0 untokenized). */
    boolean needsPromptTokens();

    /**
     * Reserves the peak bytes of a request with {@code promptTokens} and {@code maxTokens}.
     *
     * @throws ApiError 400 when the request could never fit, 503 when it does not fit now
     */
    Reservation admit(int promptTokens, int maxTokens);

    /** Bytes held for one admitted request; {@link #release} returns them (once; later calls do nothing). */
    interface Reservation {
        Reservation NONE = () -> {};

        void release();
    }
}
