package dev.mlxring.constraint;

/** The languages a constraint is written in, each with the tag llguidance's C API takes for it. */
public enum ConstraintKind {
    /** A JSON Schema (draft 2020-12 subset, as llguidance's {@code docs/json_schema.md}). */
    JSON_SCHEMA("json_schema"),
    /** A grammar in llguidance's Lark dialect. */
    LARK("lark"),
    /** A regular expression in Rust {@code regex} syntax, matched against the whole output. */
    REGEX("regex"),
    /** llguidance's top-level grammar JSON: {@code {"grammars": [{"lark_grammar": ...} | {"json_schema": ...}]}}. */
    GRAMMAR("llguidance");

    private final String llguidanceTag;

    ConstraintKind(String llguidanceTag) {
        this.llguidanceTag = llguidanceTag;
    }

    /** The {@code constraint_type} string of {@code llg_new_matcher}. */
    public String llguidanceTag() {
        return llguidanceTag;
    }
}
