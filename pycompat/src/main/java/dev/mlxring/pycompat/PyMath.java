package dev.mlxring.pycompat;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Python float arithmetic where Java's and C's results may differ: CPython's {@code math.log} and
 * {@code float.__pow__} call the C library's {@code log} and {@code pow}, whose last-ulp rounding
 * is not {@link Math}'s (nor {@link StrictMath}'s). mlx-lm computes rope constants (yarn's
 * correction range and mscale, the dynamic NTK base, longrope's scale) in Python floats before
 * MLX rounds them to float32, so we call the same libm functions here.
 */
public final class PyMath {
    private static final MethodHandle LOG;
    private static final MethodHandle POW;

    static {
        Linker linker = Linker.nativeLinker();
        var libm = linker.defaultLookup();
        LOG = linker.downcallHandle(
                libm.find("log").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_DOUBLE, ValueLayout.JAVA_DOUBLE));
        POW = linker.downcallHandle(
                libm.find("pow").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_DOUBLE, ValueLayout.JAVA_DOUBLE, ValueLayout.JAVA_DOUBLE));
    }

    private PyMath() {}

    /** {@code math.log(x)} for {@code x > 0} (as CPython: libm {@code log}). */
    public static double log(double x) {
        if (!(x > 0) || Double.isInfinite(x)) {
            // CPython raises ValueError for x <= 0 and returns inf for inf; mlx-lm never gets here
            // with a valid config, so refuse rather than guess.
            throw new ArithmeticException("math domain error: log(" + x + ")");
        }
        try {
            return (double) LOG.invokeExact(x);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** {@code x ** y} for floats with a real result (as CPython's float_pow: libm {@code pow}). */
    public static double pow(double x, double y) {
        if (y == 0 || x == 1) {
            return 1.0; // float_pow's own special cases
        }
        if (x < 0 && y != Math.rint(y)) {
            throw new ArithmeticException("negative number cannot be raised to a fractional power");
        }
        try {
            return (double) POW.invokeExact(x, y);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
