package dev.mlxring.prep.jinja;

import com.hubspot.jinjava.util.HasObjectTruthValue;
import dev.mlxring.pycompat.NoneValue;

/**
 * Python's {@code None}, as distinct from an undefined value (Java null): JSON nulls nested in
 * the data, {@code tools}/{@code documents} when not given, and the {@code none} literal. It is
 * falsy, prints as {@code None}, serialises to {@code null} and is the only value that {@code is
 * none}; an undefined value is not none, as in Jinja2.
 */
public enum PyNone implements HasObjectTruthValue, NoneValue {
    INSTANCE;

    @Override
    public boolean getObjectTruthValue() {
        return false;
    }

    @Override
    public String toString() {
        return "None";
    }
}
