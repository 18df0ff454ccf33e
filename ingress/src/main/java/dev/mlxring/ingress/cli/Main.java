package dev.mlxring.ingress.cli;

import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.mlx.MlxException;
import java.io.PrintStream;

/** {@code mlx-ring} command line: the composition root for the CLI entry points. */
public final class Main {
    static final String USAGE = """
            usage: mlx-ring <command> [options]

            commands:
              generate   generate text from a prompt with a model
              help       show this text

            mlx-ring generate [--model DIR] (--prompt TEXT | --prompt-tokens 1,2,3)
                              [--max-tokens N] [--system TEXT] [--ignore-chat-template]
                              [--prefill-step-size N] [--json]
              --model DIR             MLX model directory (config.json, *.safetensors, tokenizer.json);
                                      default: the embedded SmolLM2-135M-Instruct
              --prompt TEXT           user message; rendered with the model's chat template
              --prompt-tokens IDS     raw prompt token ids, no template
              --max-tokens N          tokens to generate at most (default 256)
              --system TEXT           system message (with the chat template)
              --ignore-chat-template  tokenize --prompt as plain text
              --prefill-step-size N   prompt tokens per prefill chunk (default 2048, as mlx-lm)
              --json                  print one JSON object: token ids, text, timing, peak memory
            """;

    private Main() {}

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0 || args[0].equals("help") || args[0].equals("--help") || args[0].equals("-h")) {
            (args.length == 0 ? err : out).print(USAGE);
            return args.length == 0 ? 2 : 0;
        }
        try {
            return switch (args[0]) {
                case "generate" -> GenerateCommand.run(args, out);
                default -> throw new UsageException("unknown command '" + args[0] + "'");
            };
        } catch (UsageException e) {
            err.println("mlx-ring: " + e.getMessage());
            err.println("run 'mlx-ring help' for usage");
            return 2;
        } catch (ModelLoadException | MlxException | IllegalArgumentException | IllegalStateException e) {
            err.println("mlx-ring: " + e.getMessage());
            return 1;
        }
    }
}
