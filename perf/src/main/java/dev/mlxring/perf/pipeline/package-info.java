/**
 * The stage pipeline's own cost, model excluded: JMH benchmarks of a real
 * {@link dev.mlxring.pipeline.Engine} over stage doubles that do no work ({@link TrivialStages}),
 * and the probes that split latency by hand-off and count allocation per thread. Run by
 * {@code scripts/bench/pipeline.sh}.
 */
package dev.mlxring.perf.pipeline;
