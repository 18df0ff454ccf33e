package dev.mlxring.ingress.http;

/**
 * How one API dialect answers an {@link ApiError}: its HTTP status and body. OpenAI's (chat,
 * completions, responses) is {@link #OPENAI}; Anthropic's lives with its codec. Stateless.
 */
public interface ErrorShape {
    ErrorShape OPENAI = new ErrorShape() {
        @Override
        public int status(ApiError e) {
            return e.status();
        }

        @Override
        public String body(ApiError e) {
            return e.body();
        }
    };

    int status(ApiError e);

    String body(ApiError e);

    /** The body of an error sent as a server-sent event after the stream has started. */
    default String streamEvent(ApiError e) {
        return "data: " + body(e) + "\n\n";
    }
}
