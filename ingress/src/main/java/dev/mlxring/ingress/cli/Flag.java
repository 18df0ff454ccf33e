package dev.mlxring.ingress.cli;

import java.util.List;
import java.util.Objects;

/**
 * One flag a command accepts, as its usage lists it: {@code name} ({@code --max-tokens}),
 * {@code valueName} (the placeholder of its value, {@code N}; null for a switch, which takes
 * none), {@code defaultText} (what applies without the flag, as the usage prints it) and
 * {@code help} (what it does, one sentence). A {@code repeatable} flag may be given more than
 * once, each value kept ({@code --target A=… --target B=…}); any other flag given twice is refused.
 */
record Flag(String name, String valueName, String defaultText, String help, boolean repeatable) {
    Flag {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(defaultText, "defaultText");
        Objects.requireNonNull(help, "help");
        if (repeatable && valueName == null) {
            throw new IllegalArgumentException("a switch cannot be repeatable: " + name);
        }
        if (!name.startsWith("--")) {
            throw new IllegalArgumentException("a flag's name starts with --: " + name);
        }
    }

    /** A flag that takes a value: {@code --name VALUE}. */
    static Flag valued(String name, String valueName, Object defaultValue, String help) {
        return new Flag(
                name, Objects.requireNonNull(valueName, "valueName"), String.valueOf(defaultValue), help, false);
    }

    /** A flag that takes a value and may be given more than once: {@code --name VALUE [--name VALUE …]}. */
    static Flag repeated(String name, String valueName, String defaultText, String help) {
        return new Flag(name, Objects.requireNonNull(valueName, "valueName"), defaultText, help, true);
    }

    /** A switch: present or not, off by default. */
    static Flag toggle(String name, String help) {
        return new Flag(name, null, "off", help, false);
    }

    /** The names of {@code flags}, in order. */
    static List<String> names(List<Flag> flags) {
        return flags.stream().map(Flag::name).toList();
    }

    boolean takesValue() {
        return valueName != null;
    }

    /** {@code --name VALUE}, or {@code --name} for a switch. */
    String synopsis() {
        return takesValue() ? name + " " + valueName : name;
    }
}
