package dev.mlxring.exec;

import dev.mlxring.pipeline.TokenConstraint;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The tests' token constraint, the Java twin of {@code scripts/oracle/scripted_mask.py}: at
 * generated step {@code s} the allowed ids are those with {@code (id + offset) % modulus ==
 * s % modulus}, plus the {@code eos} ids; from step {@code completeAt} on (-1: never) only the
 * {@code eos} ids; at step {@code dryAt} (-1: never) nothing is allowed.
 * It checks the contract as exec drives it: masks and tokens alternate, each consumed token was
 * allowed, and it is closed exactly once.
 */
final class ScriptedConstraint implements TokenConstraint {
    final int modulus;
    final int offset;
    final int[] eos;
    final int dryAt;
    final int completeAt;
    private int step;
    private boolean maskPending;
    int closes;

    ScriptedConstraint(int modulus, int offset, int[] eos, int dryAt) {
        this(modulus, offset, eos, dryAt, -1);
    }

    ScriptedConstraint(int modulus, int offset, int[] eos, int dryAt, int completeAt) {
        this.completeAt = completeAt;
        this.modulus = modulus;
        this.offset = offset;
        this.eos = eos.clone();
        this.dryAt = dryAt;
    }

    /** A fresh constraint with the same rule (one per request). */
    ScriptedConstraint copy() {
        return new ScriptedConstraint(modulus, offset, eos, dryAt, completeAt);
    }

    /** The rule as scripted_mask.py reads it. */
    Map<String, Object> spec() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("modulus", modulus);
        m.put("offset", offset);
        m.put("eos", eos);
        m.put("dry_at", dryAt);
        m.put("complete_at", completeAt);
        return m;
    }

    boolean allowed(int token, int atStep) {
        for (int e : eos) {
            if (e == token) {
                return true;
            }
        }
        if (completeAt >= 0 && atStep >= completeAt) {
            return false;
        }
        return Math.floorMod(token + offset, modulus) == atStep % modulus;
    }

    @Override
    public boolean allowedTokens(int[] words) {
        if (maskPending) {
            throw new IllegalStateException("a second mask for step " + step + " before its token was consumed");
        }
        maskPending = true;
        if (step == dryAt) {
            return false;
        }
        for (int t = 0; t < words.length * 32; t++) {
            if (allowed(t, step)) {
                words[t >>> 5] |= 1 << (t & 31);
            }
        }
        return true;
    }

    @Override
    public void consume(int token) {
        if (!maskPending) {
            throw new IllegalStateException("token " + token + " consumed without a mask");
        }
        if (!allowed(token, step)) {
            throw new IllegalStateException("token " + token + " is not allowed at step " + step);
        }
        maskPending = false;
        step++;
    }

    /** Tokens consumed so far. */
    int consumed() {
        return step;
    }

    @Override
    public String error() {
        return step == dryAt ? "scripted to run dry at step " + dryAt : null;
    }

    @Override
    public String name() {
        return "scripted constraint";
    }

    @Override
    public void close() {
        closes++;
    }
}
