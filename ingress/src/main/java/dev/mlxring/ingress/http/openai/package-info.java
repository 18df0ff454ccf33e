/**
 * OpenAI's chat completions and text completions as an ingress codec ({@code POST
 * /v1/chat/completions}, {@code /v1/completions}): requests parsed and validated with
 * mlx_lm.server's rules into a {@link dev.mlxring.pipeline.GenerationRequest}, answered as
 * {@code chat.completion(.chunk)} / {@code text_completion} objects (streamed as SSE or whole)
 * through the shared {@code EngineGateway}. Threads as in the {@code http} package; {@code
 * HttpServer} registers it, nothing else calls it.
 */
package dev.mlxring.ingress.http.openai;
