// An in-process host of mlx-ring: no HTTP, explicit threads, output through a callback.
// Run from a checkout after ./mlx-ring setup:
//   java @jvm.args -Dmlxring.home=$PWD -cp "ingress/target/ingress.jar:ingress/target/lib/*" docs/examples/EmbedExample.java
import dev.mlxring.ingress.LocalEngine;
import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.SamplingSpec;
import dev.mlxring.pipeline.Session;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

public class EmbedExample {
    public static void main(String[] args) throws Exception {
        Path model = Path.of(args.length > 0 ? args[0] : "models/smollm2-135m-instruct");
        try (LocalEngine engine = LocalEngine.open(model, LocalEngine.Options.defaults(LocalEngine.contextLength(model)))) {
            GenerationRequest request = new GenerationRequest(null, "default_model",
                    new Prompt.Chat(List.of(ChatMessage.of("user", "What is the capital of France?")), List.of(), Map.of()),
                    SamplingSpec.DEFAULTS, 32, List.of(), false, 0);
            Session session = engine.submit(request, new GenerationListener() {
                @Override
                public void onCommitted(Session s, CommittedSpan span) {
                    // Runs on the sink thread; the span is reused after this returns.
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
