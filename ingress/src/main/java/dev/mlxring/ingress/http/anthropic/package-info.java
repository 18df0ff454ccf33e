/**
 * Anthropic's Messages API as an ingress codec ({@code POST /v1/messages} and
 * {@code /v1/messages/count_tokens}): requests validated into the same chat prompt the OpenAI codec
 * builds, answered in Anthropic's shapes and error codes through the shared {@code EngineGateway}.
 * Threads as in the {@code http} package; {@code HttpServer} registers it.
 */
package dev.mlxring.ingress.http.anthropic;
