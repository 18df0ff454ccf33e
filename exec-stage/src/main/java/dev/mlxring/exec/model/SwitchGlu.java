package dev.mlxring.exec.model;

import dev.mlxring.exec.nn.SwitchLinear;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * mlx-lm's {@code switch_layers.SwitchGLU}: each token's gated MLP run once per selected expert,
 * {@code down(activation(up(x), gate(x)))} through
 * {@link SwitchLinear}. With 64 or more (token, expert) pairs the rows are first sorted by expert
 * ({@code _gather_sort}) and put back afterwards ({@code _scatter_unsort}), as mlx-lm does, so
 * that the gathered matmuls read each expert's weights in order. Immutable.
 */
record SwitchGlu(SwitchLinear gateProj, SwitchLinear upProj, SwitchLinear downProj, Activation activation) {
    /** SwitchGLU's {@code activation(x_up, x_gate)}. */
    interface Activation {
        MlxArray apply(MlxArray xUp, MlxArray xGate);
    }

    /** The default, {@code SwiGLU}: {@code swiglu(gate, x)}. */
    static final Activation SWIGLU = (x, gate) -> Mlx.swiglu(gate, x);

    /** GPT-OSS's {@code SwigluOAI()}: {@code swiglu_oai(gate, x)}, clamped. */
    static final Activation SWIGLU_OAI = (x, gate) -> Mlx.swigluOai(gate, x);

    /** mlx-lm's threshold on {@code indices.size} for the sorted path. */
    static final int SORT_THRESHOLD = 64;

    /**
     * @param x {@code [..., D]}
     * @param indices {@code [..., k]}: the experts of each token
     * @return {@code [..., k, D]}: each selected expert's output
     */
    MlxArray forward(MlxArray x, MlxArray indices) {
        // mx.expand_dims(x, (-2, -3)): [..., 1, 1, D]
        x = Mlx.expandDims(Mlx.expandDims(x, -2), -2);
        boolean doSort = indices.size() >= SORT_THRESHOLD;
        MlxArray idx = indices;
        MlxArray invOrder = null;
        if (doSort) {
            // _gather_sort: rows of x.flatten(0, -3) repeated per expert slot, in expert order.
            int m = indices.dim(-1);
            MlxArray flat = Mlx.reshape(indices, -1);
            MlxArray order = Mlx.argsort(flat, -1);
            invOrder = Mlx.argsort(order, -1);
            MlxArray rows = Mlx.floorDivide(order, Mlx.scalar(m, order.dtype()));
            x = Mlx.take(Mlx.reshape(x, -1, 1, x.dim(-1)), rows, 0);
            idx = Mlx.take(flat, order, 0);
        }
        MlxArray xUp = upProj.forward(x, idx, doSort);
        MlxArray xGate = gateProj.forward(x, idx, doSort);
        MlxArray y = downProj.forward(activation.apply(xUp, xGate), idx, doSort);
        if (doSort) {
            // _scatter_unsort: y[inv_order], unflattened back to indices.shape.
            y = Mlx.take(y, invOrder, 0);
            int[] shape = new int[indices.ndim() + 2];
            System.arraycopy(indices.shape(), 0, shape, 0, indices.ndim());
            shape[shape.length - 2] = 1;
            shape[shape.length - 1] = y.dim(-1);
            y = Mlx.reshape(y, shape);
        }
        return Mlx.squeeze(y, -2);
    }
}
