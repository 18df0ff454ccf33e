package dev.mlxring.ingress.cli;

import java.util.Collection;
import java.util.Set;

/** The flag tests' command line: {@code serve} followed by the given arguments, as the CLI parses it. */
final class ServeArgs {
    private ServeArgs() {}

    /** Parses {@code serve args...} knowing {@code valued} as the flags that take a value (and no switches). */
    static CliArgs parse(Collection<String> valued, String... args) {
        String[] argv = new String[args.length + 1];
        argv[0] = "serve";
        System.arraycopy(args, 0, argv, 1, args.length);
        return CliArgs.parse(argv, 1, Set.copyOf(valued), Set.of());
    }
}
