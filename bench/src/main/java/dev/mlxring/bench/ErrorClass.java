package dev.mlxring.bench;

/**
 * The classes a failed request is counted under in {@code errors_by_class}: what went wrong, not
 * the message (which the per-request rows keep).
 */
public final class ErrorClass {
    /** Could not connect (refused, unreachable, DNS). */
    public static final String CONNECT = "connect";
    /** No answer, or no next event, within the request timeout. */
    public static final String TIMEOUT = "timeout";
    /** The server answered 429. */
    public static final String HTTP_429 = "http_429";
    /** Any other 4xx status. */
    public static final String HTTP_4XX = "http_4xx";
    /** A 5xx status. */
    public static final String HTTP_5XX = "http_5xx";
    /** An in-process engine refused the request: its queue was full. */
    public static final String OVERLOADED = "overloaded";
    /** The stream carried an error event (in-process: the request failed or was cancelled). */
    public static final String STREAM_ERROR = "stream_error";
    /** The stream ended without any generated text. */
    public static final String NO_TOKENS = "no_tokens";
    /** An event that was not JSON, or a connection that broke mid-stream. */
    public static final String PROTOCOL = "protocol";
    /** A multi-turn conversation's later turn, not sent because an earlier turn of it failed. */
    public static final String EARLIER_TURN_FAILED = "earlier_turn_failed";

    private ErrorClass() {}

    /** The class of an HTTP status other than 200. */
    public static String ofStatus(int status) {
        if (status == 429) {
            return HTTP_429;
        }
        return status >= 500 ? HTTP_5XX : HTTP_4XX;
    }
}
