package dev.mlxring.ingress.cli;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code --flag value} / {@code --switch} parsing against a declared set of flags. Unknown flags,
 * missing values and malformed numbers raise {@link UsageException} naming the flag.
 */
final class CliArgs {
    private final Map<String, String> values = new HashMap<>();
    private final Map<String, List<String>> repeated = new HashMap<>();

    private CliArgs() {}

    /** These arguments with {@code values} (flag → value) given instead of, or besides, the parsed ones. */
    CliArgs with(Map<String, String> values) {
        CliArgs a = new CliArgs();
        a.values.putAll(this.values);
        a.repeated.putAll(this.repeated);
        a.values.putAll(values);
        return a;
    }

    /** Parses {@code args[from..]} against the flags {@code command} accepts. */
    static CliArgs parse(String[] args, int from, CommandFlags command) {
        return parse(args, from, command.valued(), command.switches(), command.repeatable());
    }

    /** Parses {@code args[from..]} knowing {@code valued} as the flags that take a value and {@code switches}. */
    static CliArgs parse(String[] args, int from, Set<String> valued, Set<String> switches) {
        return parse(args, from, valued, switches, Set.of());
    }

    /**
     * Parses {@code args[from..]} knowing {@code valued} as the flags that take a value,
     * {@code switches}, and {@code repeatable} (among {@code valued}) as those that may be given
     * more than once ({@link #all(String)} lists their values).
     */
    static CliArgs parse(String[] args, int from, Set<String> valued, Set<String> switches, Set<String> repeatable) {
        CliArgs a = new CliArgs();
        List<String> extra = new ArrayList<>();
        for (int i = from; i < args.length; i++) {
            String arg = args[i];
            String name = arg;
            String inline = null;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                name = arg.substring(0, eq);
                inline = arg.substring(eq + 1);
            }
            if (valued.contains(name)) {
                String v = inline;
                if (v == null) {
                    if (i + 1 >= args.length) {
                        throw new UsageException(name + " needs a value");
                    }
                    v = args[++i];
                }
                if (repeatable.contains(name)) {
                    a.repeated.computeIfAbsent(name, k -> new ArrayList<>()).add(v);
                    a.values.putIfAbsent(name, v);
                } else if (a.values.put(name, v) != null) {
                    throw new UsageException(name + " given more than once");
                }
            } else if (switches.contains(name) && inline == null) {
                a.values.put(name, "true");
            } else {
                extra.add(arg);
            }
        }
        if (!extra.isEmpty()) {
            throw new UsageException("unknown argument " + extra.get(0));
        }
        return a;
    }

    boolean has(String flag) {
        return values.containsKey(flag);
    }

    String get(String flag) {
        return values.get(flag);
    }

    /** Every value of a repeatable {@code flag}, in the order given; empty when absent. */
    List<String> all(String flag) {
        List<String> v = repeated.get(flag);
        if (v != null) {
            return List.copyOf(v);
        }
        return values.containsKey(flag) ? List.of(values.get(flag)) : List.of();
    }

    int intValue(String flag, int dflt, int min) {
        String v = values.get(flag);
        if (v == null) {
            return dflt;
        }
        int n;
        try {
            n = Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new UsageException(flag + " must be an integer, got '" + v + "'");
        }
        if (n < min) {
            throw new UsageException(flag + " must be >= " + min + ", got " + n);
        }
        return n;
    }

    double doubleValue(String flag, double dflt) {
        String v = values.get(flag);
        if (v == null) {
            return dflt;
        }
        try {
            return Double.parseDouble(v.trim());
        } catch (NumberFormatException e) {
            throw new UsageException(flag + " must be a number, got '" + v + "'");
        }
    }

    /** A whole number that may exceed int range ({@code --seed}); null when the flag is absent. */
    Long longValue(String flag) {
        String v = values.get(flag);
        if (v == null) {
            return null;
        }
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new UsageException(flag + " must be an integer, got '" + v + "'");
        }
    }

    /** A comma-separated list of non-negative ints ({@code --prompt-tokens 1,2,3}). */
    int[] intList(String flag) {
        String v = values.get(flag);
        String[] parts = v.split(",");
        int[] out = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            try {
                out[i] = Integer.parseInt(parts[i].trim());
            } catch (NumberFormatException e) {
                throw new UsageException(flag + " must be comma-separated token ids, got '" + parts[i] + "'");
            }
            if (out[i] < 0) {
                throw new UsageException(flag + " holds a negative token id: " + out[i]);
            }
        }
        return out;
    }
}
