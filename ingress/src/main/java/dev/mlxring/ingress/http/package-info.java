/**
 * The HTTP surface: the Undertow listener with its connection gate and clocks, the routing of
 * {@link HttpServer}, and what the three codecs ({@code openai}, {@code anthropic}, {@code
 * responses}) share ({@link EngineGateway}, the one request path into the engine; {@link
 * ExchangeWriter}; request field checks; error shapes; metrics). Requests are parsed on
 * Undertow's IO and worker threads; responders are {@link dev.mlxring.pipeline.GenerationListener}s
 * called on the engine's sink thread, and return a span's credits only when its socket write
 * completes. Built by {@code serve} and by tests.
 */
package dev.mlxring.ingress.http;
