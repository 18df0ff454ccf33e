package dev.mlxring.pipeline;

/** A request-ring slot: carries one session from ingress through prep and plan to exec. */
final class RequestEvent {
    Session session;
}
