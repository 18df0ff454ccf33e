// An in-process host of mlx-ring: no HTTP, explicit threads, output through a callback.
// It needs the engine module alone (dev.mlxring:engine); from a checkout after ./mlx-ring setup:
//   java @jvm.args -Dmlxring.home=$PWD -cp "engine/target/classes:$(cat engine/target/runtime-classpath.txt)" \
//     docs/examples/EmbedExample.java
// (EmbedExampleTest compiles and runs this file on that class path.)
import dev.mlxring.engine.LocalEngine;
import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.EngineConfig;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.SamplingSpec;
import dev.mlxring.pipeline.Session;
import dev.mlxring.pipeline.WaitMode;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

public class EmbedExample {
    public static void main(String[] args) throws Exception {
        Path model = Path.of(args.length > 0 ? args[0] : "models/smollm2-135m-instruct");
        // Up to 4 sessions at once as rows of one batch; idle stage threads park.
        EngineConfig config = EngineConfig.builder()
                .decodeConcurrency(4)
                .promptConcurrency(2)
                .waitMode(WaitMode.BLOCKING)
                .build();
        LocalEngine.Options options = LocalEngine.Options.defaults(LocalEngine.contextLength(model)).withEngine(config);
        try (LocalEngine engine = LocalEngine.open(model, options)) {
            GenerationRequest request = GenerationRequest.builder()
                    .userMessage("What is the capital of France?")
                    .maxTokens(32)
                    .sampling(SamplingSpec.builder().temperature(0.0).build())
                    .build();
            Session session = engine.submit(request, new GenerationListener() {
                @Override
                public void onCommitted(Session s, CommittedSpan span) {
                    // Runs on the sink thread; the span is reused after this returns. The final
                    // span (tokenId == -1) carries text flushed at the end and no token.
                    System.out.print(span.text);
                    System.out.flush();
                }

                @Override
                public void onComplete(Session s, Outcome outcome) {
                    System.out.println("\n[" + outcome.state() + ", " + outcome.finishReason() + ", " + outcome.usage() + "]");
                }
            });
            session.result().get(2, TimeUnit.MINUTES);
        }
    }
}
