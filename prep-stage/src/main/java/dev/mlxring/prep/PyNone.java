package dev.mlxring.prep;

import com.hubspot.jinjava.util.HasObjectTruthValue;

/**
 * Python's {@code None}, as distinct from an undefined value (Java null): JSON nulls nested in
 * the data, {@code tools}/{@code documents} when not given, and the {@code none} literal. It is
 * falsy, prints as {@code None}, serialises to {@code null} and is the only value that {@code is
 * none}; an undefined value is not none, as in Jinja2.
 */
enum PyNone implements HasObjectTruthValue {
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
