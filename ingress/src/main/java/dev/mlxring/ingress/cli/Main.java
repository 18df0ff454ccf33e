package dev.mlxring.ingress.cli;

import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.mlx.MlxException;
import java.io.PrintStream;
import java.util.List;
import java.util.Map;

/** {@code mlx-ring} command line: the composition root for the CLI entry points. */
public final class Main {
    /** The commands the CLI runs, by name, with every flag each accepts. */
    static final Map<String, CommandFlags> COMMANDS = Map.of(
            ServeCommand.FLAGS.command(), ServeCommand.FLAGS,
            GenerateCommand.FLAGS.command(), GenerateCommand.FLAGS,
            BenchCommand.FLAGS.command(), BenchCommand.FLAGS);

    static final String USAGE = """
            usage: mlx-ring <command> [options]

            commands:
              serve      serve a model over HTTP (OpenAI chat / responses, Anthropic messages)
              generate   generate text from a prompt with a model
              bench      bench serve: benchmark OpenAI-compatible servers side by side; bench engine:
                         the same in-process; bench decode: B=1 tok/s against mlx-lm and llama.cpp;
                         bench compare A B: two runs (docs/bench.md)
              help       show this text; 'mlx-ring help COMMAND' shows a command's flags

            'mlx-ring COMMAND --help' lists every flag COMMAND takes, with its default.
            The launcher script adds: setup [--backend cpu|cuda|auto] (prepare everything),
            test [mvn args] (set up, then run the test suite); see docs/cli.md.
            """;

    private Main() {}

    /** {@code help}, {@code --help} or {@code -h}: as the first argument, each asks for the usage. */
    private static boolean isHelp(String arg) {
        return arg.equals("help") || arg.equals("--help") || arg.equals("-h");
    }

    public static void main(String[] args) {
        // One logging library: Undertow/XNIO log through jboss-logging, which picks SLF4J only
        // when told (or when Logback is present); configured once, here, before any of it loads.
        System.setProperty("org.jboss.logging.provider", "slf4j");
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0) {
            err.print(USAGE);
            return 2;
        }
        if (isHelp(args[0])) {
            if (args.length == 1 || args.length == 2 && isHelp(args[1])) {
                out.print(USAGE);
                return 0;
            }
            CommandFlags command = COMMANDS.get(args[1]);
            if (command == null || args.length > 2) {
                err.println("mlx-ring: help takes one command name ("
                        + String.join(", ", COMMANDS.keySet().stream().sorted().toList()) + "), got '"
                        + String.join(" ", List.of(args).subList(1, args.length)) + "'");
                return 2;
            }
            out.print(command.usage());
            return 0;
        }
        CommandFlags command = COMMANDS.get(args[0]);
        if (command != null) {
            for (String a : args) {
                if (a.equals("--help") || a.equals("-h")) {
                    out.print(command.usage()); // `mlx-ring serve --help` asks for the flags, not for a run
                    return 0;
                }
            }
        }
        try {
            return switch (args[0]) {
                case "generate" -> GenerateCommand.run(args, out);
                case "serve" -> ServeCommand.run(args, out);
                case "bench" -> BenchCommand.run(args, out, err);
                default -> throw new UsageException("unknown command '" + args[0] + "'");
            };
        } catch (UsageException e) {
            err.println("mlx-ring: " + e.getMessage());
            err.println(
                    command == null
                            ? "run 'mlx-ring help' for usage"
                            : "run 'mlx-ring " + command.command() + " --help' for its flags");
            return 2;
        } catch (ModelLoadException | MlxException | IllegalArgumentException | IllegalStateException e) {
            err.println("mlx-ring: " + e.getMessage());
            return 1;
        }
    }
}
