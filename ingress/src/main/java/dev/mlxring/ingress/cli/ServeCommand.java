package dev.mlxring.ingress.cli;

import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.kv.KvQuantization;
import dev.mlxring.ingress.LocalEngine;
import dev.mlxring.ingress.http.HttpServer;
import dev.mlxring.ingress.http.ServerDefaults;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.EngineConfig;
import dev.mlxring.pipeline.WaitMode;
import dev.mlxring.plan.RequestPlanner;
import dev.mlxring.prep.HfTokenizer;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

/**
 * {@code mlx-ring serve}: the composition root of the server. The only place that knows every
 * stage implementation: prep (template + tokenizer), plan (defaults, admission), exec (the model
 * on the MLX thread), sink (detokenizer, stops, reasoning) and the HTTP surface.
 */
final class ServeCommand {
    private ServeCommand() {}

    /** What {@link #start} built, closed in reverse order. */
    record Running(HttpServer server, LocalEngine local) implements AutoCloseable {
        Engine engine() {
            return local.engine();
        }

        @Override
        public void close() {
            server.close();
            local.close();
        }
    }

    static int run(String[] args, PrintStream out) {
        CliArgs a = CliArgs.parse(args, 1,
                Set.of("--model", "--host", "--port", "--max-tokens", "--temp", "--top-p", "--top-k", "--min-p",
                        "--api-key", "--prefill-step-size", "--max-queued", "--wait-mode", "--kv-bits",
                        "--kv-group-size", "--quantized-kv-start", CpuKernelsFlag.NAME),
                Set.of());
        Running running = start(a, out);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            running.close();
            stopped.countDown();
        }, "mlxring-shutdown"));
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }

    static Running start(CliArgs a, PrintStream out) {
        KvQuantization kv = KvFlags.parse(a);
        CpuKernels kernels = CpuKernelsFlag.parse(a);
        Path modelDir = a.has("--model") ? Path.of(a.get("--model"))
                : ProjectHome.get().resolve(GenerateCommand.DEFAULT_MODEL);
        if (!Files.isDirectory(modelDir)) {
            throw new IllegalArgumentException("model directory " + modelDir + " does not exist"
                    + (a.has("--model") ? "" : " (run ./mlx-ring setup to prepare the default model)"));
        }
        String host = a.has("--host") ? a.get("--host") : "127.0.0.1";
        int port = a.intValue("--port", 8080, 0);
        int maxTokens = a.intValue("--max-tokens", 512, 1);
        int prefillStep = a.intValue("--prefill-step-size", GenerationOptions.DEFAULT_PREFILL_STEP_SIZE, 1);
        double temp = doubleFlag(a, "--temp", 0.0);
        double topP = doubleFlag(a, "--top-p", 1.0);
        double minP = doubleFlag(a, "--min-p", 0.0);
        int topK = a.intValue("--top-k", 0, 0);
        WaitMode waitMode = a.has("--wait-mode") ? waitMode(a.get("--wait-mode")) : WaitMode.BLOCKING;
        EngineConfig engineConfig = EngineConfig.defaults().withWaitMode(waitMode)
                .withMaxQueued(a.intValue("--max-queued", EngineConfig.defaults().maxQueued(), 1));

        int maxContext = LocalEngine.contextLength(modelDir);
        LocalEngine local = LocalEngine.open(modelDir, new LocalEngine.Options(
                new RequestPlanner.Defaults(maxTokens, temp, topP, topK, minP, maxContext, kv),
                prefillStep, engineConfig, kernels));
        HfTokenizer tokenizer = local.tokenizer();
        String modelId = modelDir.getFileName().toString();
        HttpServer server;
        try {
            server = new HttpServer(new HttpServer.Config(host, port, modelId, a.get("--api-key"),
                    new ServerDefaults(maxTokens, maxContext),
                    "mlx-ring-0.1.0-mlx-" + Mlx.version()),
                    local.engine(), id -> tokenizer.decode(new int[] {id}, false)).start();
        } catch (RuntimeException e) {
            local.close();
            throw e;
        }
        out.printf("mlx-ring serving %s on http://%s:%d (OpenAI-compatible: /v1/chat/completions, /v1/completions,"
                + " /v1/models, /health)%n", modelId, host, server.port());
        out.flush();
        return new Running(server, local);
    }

    private static double doubleFlag(CliArgs a, String flag, double dflt) {
        if (!a.has(flag)) {
            return dflt;
        }
        try {
            return Double.parseDouble(a.get(flag));
        } catch (NumberFormatException e) {
            throw new UsageException(flag + " must be a number, got '" + a.get(flag) + "'");
        }
    }

    private static WaitMode waitMode(String v) {
        try {
            return WaitMode.valueOf(v.toUpperCase().replace('-', '_'));
        } catch (IllegalArgumentException e) {
            throw new UsageException("--wait-mode must be blocking, yielding or busy-spin, got '" + v + "'");
        }
    }
}
