package dev.mlxring.constraint;

import java.util.List;

/** Constraints with one valid output each, shared by the matcher test and the oracle test. */
record ConstraintCases(String name, ConstraintKind kind, String source, String validText) {

    static final ConstraintCases NESTED_OBJECT = new ConstraintCases(
            "nested object",
            ConstraintKind.JSON_SCHEMA,
            """
            {"type":"object","properties":{
              "name":{"type":"string"},
              "address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}},
                         "required":["city","zip"]}},
             "required":["name","address"]}""",
            "{\"name\":\"Ann\",\"address\":{\"city\":\"Paris\",\"zip\":\"75001\"}}");

    static final ConstraintCases ENUM =
            new ConstraintCases("enum", ConstraintKind.JSON_SCHEMA, """
            {"type":"object","properties":{"color":{"enum":["red","green","blue"]}},"required":["color"]}""", "{\"color\":\"green\"}");

    static List<ConstraintCases> all() {
        return List.of(
                NESTED_OBJECT,
                new ConstraintCases(
                        "array with minItems and maxItems",
                        ConstraintKind.JSON_SCHEMA,
                        "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":3}",
                        "[1,22,333]"),
                ENUM,
                new ConstraintCases(
                        "$ref to $defs",
                        ConstraintKind.JSON_SCHEMA,
                        """
                        {"$defs":{"point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},
                                           "required":["x","y"]}},
                         "type":"object","properties":{"from":{"$ref":"#/$defs/point"},"to":{"$ref":"#/$defs/point"}},
                         "required":["from","to"]}""",
                        "{\"from\":{\"x\":1.5,\"y\":-2},\"to\":{\"x\":0,\"y\":3}}"),
                new ConstraintCases("string pattern", ConstraintKind.JSON_SCHEMA, """
                        {"type":"object","properties":{"date":{"type":"string","pattern":"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}},
                         "required":["date"]}""", "{\"date\":\"2026-12-04\"}"),
                new ConstraintCases("regex", ConstraintKind.REGEX, "[A-Z][a-z]+ [0-9]{1,3}", "Route 66"),
                new ConstraintCases("lark", ConstraintKind.LARK, """
                        start: greeting " " name "!"
                        greeting: "hello" | "hi"
                        name: /[A-Z][a-z]+/
                        """, "hello World!"),
                new ConstraintCases("top-level grammar JSON", ConstraintKind.GRAMMAR, """
                        {"grammars":[{"json_schema":{"type":"object","properties":{"ok":{"type":"boolean"}},
                                                     "required":["ok"]}}]}""", "{\"ok\":true}"));
    }

    @Override
    public String toString() {
        return name;
    }
}
