package dev.mlxring.ingress.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Every flag one command accepts, in the order its usage lists them: the one table that both
 * {@link CliArgs#parse(String[], int, CommandFlags)} parses against and {@link #usage()} prints,
 * so the usage cannot name a flag the parser refuses nor leave out one it accepts. A flag named
 * twice is a programming error.
 */
final class CommandFlags {
    /** Column at which the usage's descriptions start. */
    private static final int HELP_COLUMN = 32;
    /** Width the usage's lines are wrapped to. */
    private static final int LINE_WIDTH = 100;

    private final String command;
    private final String synopsis;
    private final String summary;
    private final Map<String, Flag> flags;
    private final String notes;

    private CommandFlags(String command, String synopsis, String summary, Map<String, Flag> flags, String notes) {
        this.command = command;
        this.synopsis = synopsis;
        this.summary = summary;
        this.flags = flags;
        this.notes = notes;
    }

    /**
     * The table of {@code command}: {@code summary} is the usage's first line after the synopsis,
     * {@code notes} (may be empty) is printed after the flags as it is.
     */
    static CommandFlags of(String command, String summary, List<List<Flag>> groups, String notes) {
        return of(command, command + " [options]", summary, groups, notes);
    }

    /**
     * As {@link #of(String, String, List, String)}, the usage's first line being
     * {@code usage: mlx-ring SYNOPSIS} ({@code bench serve --target NAME=URL [options]}) for a
     * command with a sub-command or required flags.
     */
    static CommandFlags of(String command, String synopsis, String summary, List<List<Flag>> groups, String notes) {
        Map<String, Flag> byName = new LinkedHashMap<>();
        for (List<Flag> group : groups) {
            for (Flag f : group) {
                if (byName.put(f.name(), f) != null) {
                    throw new IllegalArgumentException(command + " declares " + f.name() + " twice");
                }
            }
        }
        return new CommandFlags(command, synopsis, summary, byName, notes);
    }

    String command() {
        return command;
    }

    /** The flags, in usage order. */
    List<Flag> flags() {
        return List.copyOf(flags.values());
    }

    /** The names of the flags that take a value. */
    Set<String> valued() {
        Set<String> out = new LinkedHashSet<>();
        for (Flag f : flags.values()) {
            if (f.takesValue()) {
                out.add(f.name());
            }
        }
        return out;
    }

    /** The names of the flags that may be given more than once. */
    Set<String> repeatable() {
        Set<String> out = new LinkedHashSet<>();
        for (Flag f : flags.values()) {
            if (f.repeatable()) {
                out.add(f.name());
            }
        }
        return out;
    }

    /** The names of the switches. */
    Set<String> switches() {
        Set<String> out = new LinkedHashSet<>();
        for (Flag f : flags.values()) {
            if (!f.takesValue()) {
                out.add(f.name());
            }
        }
        return out;
    }

    /**
     * The command's usage: synopsis, summary, then one entry per flag ({@code --name VALUE},
     * what it does, {@code (default: …)}), wrapped to {@value #LINE_WIDTH} columns, then the notes.
     */
    String usage() {
        StringBuilder sb = new StringBuilder();
        sb.append("usage: mlx-ring ")
                .append(synopsis)
                .append("\n\n")
                .append(summary)
                .append("\n\noptions:\n");
        for (Flag f : flags.values()) {
            String head = "  " + f.synopsis();
            String text = f.help() + " (default: " + f.defaultText() + ")";
            List<String> lines = wrap(text, LINE_WIDTH - HELP_COLUMN);
            if (head.length() < HELP_COLUMN - 1) {
                sb.append(head)
                        .append(" ".repeat(HELP_COLUMN - head.length()))
                        .append(lines.getFirst())
                        .append('\n');
                lines = lines.subList(1, lines.size());
            } else {
                sb.append(head).append('\n');
            }
            for (String line : lines) {
                sb.append(" ".repeat(HELP_COLUMN)).append(line).append('\n');
            }
        }
        if (!notes.isEmpty()) {
            sb.append('\n').append(notes);
            if (!notes.endsWith("\n")) {
                sb.append('\n');
            }
        }
        return sb.toString();
    }

    /** {@code text} split at spaces into lines of at most {@code width} characters (a longer word stands alone). */
    private static List<String> wrap(String text, int width) {
        List<String> lines = new ArrayList<>();
        StringBuilder line = new StringBuilder();
        for (String word : text.split(" ")) {
            if (!line.isEmpty() && line.length() + 1 + word.length() > width) {
                lines.add(line.toString());
                line.setLength(0);
            }
            if (!line.isEmpty()) {
                line.append(' ');
            }
            line.append(word);
        }
        lines.add(line.toString());
        return lines;
    }
}
