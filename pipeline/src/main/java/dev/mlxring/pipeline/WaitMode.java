package dev.mlxring.pipeline;

import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.BusySpinWaitStrategy;
import com.lmax.disruptor.WaitStrategy;
import com.lmax.disruptor.YieldingWaitStrategy;

/**
 * How idle stage threads wait. {@link #BLOCKING} (default) costs no CPU when idle; {@link #YIELDING}
 * and {@link #BUSY_SPIN} trade a core each for lower hand-off latency, for hosts that pin cores.
 */
public enum WaitMode {
    BLOCKING,
    YIELDING,
    BUSY_SPIN;

    WaitStrategy strategy() {
        return switch (this) {
            case BLOCKING -> new BlockingWaitStrategy();
            case YIELDING -> new YieldingWaitStrategy();
            case BUSY_SPIN -> new BusySpinWaitStrategy();
        };
    }
}
