package dev.mlxring.bench;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Everything one {@code bench serve} run needs, validated: the targets (in the order given: A,
 * B, …), the API, the load levels, the workload's name and prompts, the rounds, the warm-up
 * requests per target, the SLOs, the results folder, the request timeout, the foreign-CPU bound
 * (cores) above which a phase is flagged, whether to draw the PNG plots, and the command line as
 * typed.
 */
public record BenchOptions(
        List<Target> targets,
        ApiDialect api,
        List<LoadLevel> levels,
        String workload,
        Workloads.Params workloadParams,
        List<BenchPrompt> prompts,
        int rounds,
        int warmup,
        Slo slo,
        Path out,
        Duration timeout,
        double cpuBoundCores,
        boolean plots,
        String command) {
    public BenchOptions {
        targets = List.copyOf(targets);
        levels = List.copyOf(levels);
        prompts = List.copyOf(prompts);
        if (targets.isEmpty()) {
            throw new IllegalArgumentException("bench serve needs at least one --target NAME=URL");
        }
        if (targets.stream().map(Target::name).distinct().count() != targets.size()) {
            throw new IllegalArgumentException("two --target entries have the same name");
        }
        if (levels.isEmpty()) {
            throw new IllegalArgumentException("bench serve needs --max-concurrency or --request-rate");
        }
        if (rounds < 1 || warmup < 0) {
            throw new IllegalArgumentException("--rounds must be >= 1 and --warmup >= 0");
        }
    }
}
