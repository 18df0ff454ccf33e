package dev.mlxring.mlx;

/** MLX element types; {@link #code} is MLX's {@code Dtype::Val} ordinal as the shim expects it. */
public enum Dtype {
    BOOL(0, 1, "bool"),
    UINT8(1, 1, "uint8"),
    UINT16(2, 2, "uint16"),
    UINT32(3, 4, "uint32"),
    UINT64(4, 8, "uint64"),
    INT8(5, 1, "int8"),
    INT16(6, 2, "int16"),
    INT32(7, 4, "int32"),
    INT64(8, 8, "int64"),
    FLOAT16(9, 2, "float16"),
    FLOAT32(10, 4, "float32"),
    FLOAT64(11, 8, "float64"),
    BFLOAT16(12, 2, "bfloat16"),
    COMPLEX64(13, 8, "complex64");

    private static final Dtype[] BY_CODE = values();

    public final int code;
    public final int sizeInBytes;
    /** The name mlx.core prints, e.g. {@code bfloat16}. */
    public final String mlxName;

    Dtype(int code, int sizeInBytes, String mlxName) {
        this.code = code;
        this.sizeInBytes = sizeInBytes;
        this.mlxName = mlxName;
    }

    public boolean isFloating() {
        return this == FLOAT16 || this == FLOAT32 || this == FLOAT64 || this == BFLOAT16;
    }

    static Dtype ofCode(int code) {
        return BY_CODE[code];
    }

    /** Parses an mlx.core or safetensors/config dtype name ({@code bfloat16}, {@code float32}, {@code F16}...). */
    public static Dtype parse(String name) {
        String n = name.toLowerCase().replace("mlx.core.", "").replace("torch.", "");
        return switch (n) {
            case "bf16", "bfloat16" -> BFLOAT16;
            case "f16", "float16", "half" -> FLOAT16;
            case "f32", "float32", "float" -> FLOAT32;
            case "f64", "float64" -> FLOAT64;
            case "i32", "int32" -> INT32;
            case "u32", "uint32" -> UINT32;
            case "u8", "uint8" -> UINT8;
            case "bool" -> BOOL;
            default -> throw new IllegalArgumentException("unknown dtype '" + name + "'");
        };
    }
}
