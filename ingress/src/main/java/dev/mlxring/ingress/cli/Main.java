package dev.mlxring.ingress.cli;

import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.mlx.MlxException;
import java.io.PrintStream;

/** {@code mlx-ring} command line: the composition root for the CLI entry points. */
public final class Main {
    static final String USAGE = """
            usage: mlx-ring <command> [options]

            commands:
              serve      serve a model over HTTP (OpenAI chat / responses, Anthropic messages)
              generate   generate text from a prompt with a model
              help       show this text

            mlx-ring serve [--model DIR] [--host 127.0.0.1] [--port 8080] [--max-tokens 512]
                           [--temp 0.0] [--top-p 1.0] [--top-k 0] [--min-p 0.0] [--api-key KEY]
                           [--prefill-step-size N] [--max-queued N] [--wait-mode blocking|yielding|busy-spin]
                           [--kv-bits B [--kv-group-size G] [--quantized-kv-start N]] [--max-kv-size N]
                           [--cpu-kernels native|mlx] [--numerics exact|fast] [--dequantized-weights]
                           [--shutdown-grace-seconds 30]
                           [--read-timeout-seconds 30] [--idle-timeout-seconds 60] [--max-connections 1024]
                           [--decode-concurrency 8] [--prompt-concurrency 8] [--kv-budget BYTES]
                           [--prefill-share 0.5] [--short-prompts-first on|off]
                           [--prompt-cache-size 10] [--prompt-cache-bytes B]
                           [--prompt-cache-dir DIR [--prompt-cache-disk-bytes 2GB]
                             [--prompt-cache-quarantine-files 8] [--prompt-cache-quarantine-bytes 1073741824]]
                           [--speculative ngram|draft|off] [--draft-model DIR] [--num-draft-tokens 3]
                           [--prompt-lookup-min 1] [--prompt-lookup-max 3]  (as generate's; requests
                             then run one at a time, each that can speculate speculating)
              --read-timeout-seconds S  a request's headers, then its body, must each arrive within S
                                      seconds, else 408 and the connection closes (default 30)
              --idle-timeout-seconds S  close a connection with no request begun for S seconds (default 60)
              --max-connections N     open connections at most; one more is answered 503 (default 1024)
              --prefill-share F       the most of exec's time prompt chunks take while other rows
                                      generate, in (0, 1] (default 0.5; 1 = mlx-lm's schedule)
              --short-prompts-first on|off  read a prompt that fits in one chunk ahead of a long
                                      prompt's remaining chunks (default on)
              --prompt-cache-size N   prompt KV caches kept in RAM for prefix reuse, as mlx_lm.server
                                      (default 10; 0 = off)
              --prompt-cache-bytes B  their byte cap, e.g. 2GB (default: none); least recently used out
              --prompt-cache-dir DIR  also keep them on disk (Chronicle Map): they survive a restart
              --prompt-cache-disk-bytes B  the disk tier's cap, preallocated (default 2GB)
              --prompt-cache-quarantine-files N, --prompt-cache-quarantine-bytes B  how much of the
                                      damaged map files DIR/quarantine/ keeps (default 8 files, 1 GiB)

            tensor-parallel, under MLX's launcher (docs/distributed.md), serve and generate:
              .venv/bin/mlx.launch -n 2 -- ./mlx-ring serve --model DIR      (or --hostfile hosts.json)
              --distributed-backend B the group's backend: any (default, MLX picks), ring, mpi, nccl, jaccl
              --rank-timeout-seconds S  a rank silent this long fails the group (default 10)
              --control-host H, --control-port P  rank 0's control channel (default: derived from
                                      the ring hostfile or NCCL_HOST_IP / NCCL_PORT)

            mlx-ring generate [--model DIR] (--prompt TEXT | --prompt-tokens 1,2,3)
                              [--max-tokens N] [--system TEXT] [--ignore-chat-template]
                              [--prefill-step-size N] [--json] [--logprobs N] [sampling options]
                              [--kv-bits B [--kv-group-size G] [--quantized-kv-start N]] [--max-kv-size N]
                              [--cpu-kernels native|mlx] [--numerics exact|fast] [--dequantized-weights]
                              [--speculative ngram|draft|off] [--draft-model DIR] [--num-draft-tokens 3]
                              [--prompt-lookup-min 1] [--prompt-lookup-max 3]
              --model DIR             MLX model directory (config.json, *.safetensors, tokenizer.json);
                                      default: the embedded SmolLM2-135M-Instruct
              --prompt TEXT           user message; rendered with the model's chat template
              --prompt-tokens IDS     raw prompt token ids, no template
              --max-tokens N          tokens to generate at most (default 256)
              --system TEXT           system message (with the chat template)
              --ignore-chat-template  tokenize --prompt as plain text
              --prefill-step-size N   prompt tokens per prefill chunk (default 2048, as mlx-lm)
              --json                  print one JSON object: token ids, text, timing, peak memory
              --logprobs N            with --json: each token's logprob and the top N (0..11)
              --kv-bits B             quantize the KV cache to B bits (2, 3, 4, 5, 6, 8), as mlx-lm
              --kv-group-size G       its group size (32, 64, 128; default 64)
              --quantized-kv-start N  quantize once the cache holds more than N tokens (default 5000)
              --max-kv-size N         keep at most N positions per layer in rotating caches (N > 4), as
                                      mlx_lm.generate; qwen2, qwen3 and phi3 use it (llama and gemma3_text
                                      keep their own cache layout, as in mlx-lm); not with --kv-bits
              --cpu-kernels K         quantized matmuls on `native` (exact AVX2 kernels, the default)
                                      or `mlx` (MLX's own); both give the same bytes
              --numerics N            `exact` (mlx-lm's bytes, the default) or `fast`: 4/8-bit
                                      matmuls by float32 FMA kernels, not mlx-lm's bytes (held to a
                                      float64 rendering); needs --cpu-kernels native and AVX2/FMA
              --dequantized-weights   also keep quantized weights dequantized (2 bytes a weight, as
                                      the unquantized model): same bytes, faster decode and prefill
                                      for float16/bfloat16 models; made on the first forward pass
              --speculative M         speculative decoding: `draft` (a draft model proposes, as
                                      mlx_lm.generate --draft-model; the default with --draft-model),
                                      `ngram` (prompt lookup: the tokens that followed the last n tokens'
                                      earliest earlier occurrence, longest n first) or `off` (default);
                                      output as mlx-lm's speculative_generate_step; not with penalties,
                                      logit_bias, --max-kv-size, or past a sliding window
              --draft-model DIR       the draft model (its tokenizer must match the model's)
              --num-draft-tokens N    tokens proposed per verification step at most (default 3)
              --prompt-lookup-min N   smallest n-gram prompt lookup matches (default 1)
              --prompt-lookup-max N   largest n-gram, tried first (default 3)

            sampling options (mlx-lm's sampler chain and logits processors; see docs/sampling.md):
              --temp T                temperature (default 0 = greedy argmax)
              --top-p P               nucleus sampling, applied when 0 < P < 1 (default 1)
              --min-p P               min-p filter in [0, 1] (default 0 = off)
              --min-tokens-to-keep N  tokens min-p always keeps (default 1)
              --xtc-probability P     chance XTC applies at a step, in [0, 1] (default 0 = off)
              --xtc-threshold T       XTC probability threshold in [0, 0.5] (default 0.1)
              --top-k K               keep the K most likely tokens (default 0 = off)
              --repetition-penalty R  multiplicative penalty on recent tokens (default 0 = off)
              --repetition-context-size N   tokens it looks back (default 20; 0 = all)
              --presence-penalty P    additive penalty on recent tokens (default 0 = off)
              --presence-context-size N     (default 20; 0 = all)
              --frequency-penalty F   additive penalty per occurrence (default 0 = off)
              --frequency-context-size N    (default 20; 0 = all)
              --seed S                random seed, as mlx_lm.generate --seed S; default: clock-seeded
            """;

    private Main() {}

    public static void main(String[] args) {
        // One logging library: Undertow/XNIO log through jboss-logging, which picks SLF4J only
        // when told (or when Logback is present); configured once, here, before any of it loads.
        System.setProperty("org.jboss.logging.provider", "slf4j");
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0 || args[0].equals("help") || args[0].equals("--help") || args[0].equals("-h")) {
            (args.length == 0 ? err : out).print(USAGE);
            return args.length == 0 ? 2 : 0;
        }
        for (String a : args) {
            if (a.equals("--help") || a.equals("-h")) {
                out.print(USAGE); // `mlx-ring serve --help` asks for the flags, not for a run
                return 0;
            }
        }
        try {
            return switch (args[0]) {
                case "generate" -> GenerateCommand.run(args, out);
                case "serve" -> ServeCommand.run(args, out);
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
