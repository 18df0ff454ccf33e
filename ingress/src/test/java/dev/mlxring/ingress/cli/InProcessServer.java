package dev.mlxring.ingress.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code serve} started in the test's own JVM: {@code serve --port 0} followed by the test's
 * flags, parsed by {@code serve}'s own flag table (so a flag {@code serve} does not know fails
 * the start as it would on the command line), its start-up output discarded. It returns once the
 * server listens on the port it chose; the caller closes what it returns.
 */
final class InProcessServer {
    private InProcessServer() {}

    /** Starts {@code serve --port 0 <flags>}. */
    static ServeCommand.Running start(String... flags) {
        return start(List.of(flags));
    }

    /** Starts {@code serve --port 0 <flags>}. */
    static ServeCommand.Running start(List<String> flags) {
        List<String> argv = new ArrayList<>(List.of("serve", "--port", "0"));
        argv.addAll(flags);
        return ServeCommand.start(
                CliArgs.parse(argv.toArray(String[]::new), 1, ServeCommand.FLAGS),
                new PrintStream(new ByteArrayOutputStream()));
    }

    /** {@code "http://127.0.0.1:<port>"} of {@code server}, without a trailing slash. */
    static String base(ServeCommand.Running server) {
        return "http://127.0.0.1:" + server.server().port();
    }
}
