/**
 * OpenAI's Responses API as an ingress codec ({@code POST}, {@code GET} and {@code DELETE
 * /v1/responses}), with stored responses kept in memory for {@code previous_response_id}. Threads as
 * in the {@code http} package; {@code HttpServer} registers it.
 */
package dev.mlxring.ingress.http.responses;
