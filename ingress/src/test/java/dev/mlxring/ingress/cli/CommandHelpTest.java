package dev.mlxring.ingress.cli;

import static dev.mlxring.ingress.cli.CliRun.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.EngineConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Per-command help: {@code mlx-ring COMMAND --help} lists every flag that COMMAND's parser accepts,
 * each with its default, exits 0 and runs nothing; docs/cli.md's synopses name the same flags.
 */
class CommandHelpTest {
    private static final Pattern FLAG = Pattern.compile("--[a-z][a-z-]*[a-z]");
    /** A usage entry: a line that starts with two spaces and a flag. */
    private static final Pattern ENTRY = Pattern.compile("(?m)^  (--[a-z][a-z-]*[a-z])");

    private static Set<String> matches(Pattern p, String text) {
        Set<String> out = new TreeSet<>();
        Matcher m = p.matcher(text);
        while (m.find()) {
            out.add(m.group(m.groupCount() == 0 ? 0 : 1));
        }
        return out;
    }

    /** Whether the parser of {@code command} takes {@code flag} (with a value when it needs one). */
    private static boolean parserAccepts(CommandFlags command, String flag) {
        for (String[] argv :
                List.of(new String[] {command.command(), flag}, new String[] {command.command(), flag, "1"})) {
            try {
                if (CliArgs.parse(argv, 1, command).has(flag)) {
                    return true;
                }
            } catch (UsageException e) {
                // not in this form
            }
        }
        return false;
    }

    @Test
    void eachCommandsHelpListsEveryFlagItsParserAcceptsWithItsDefault() {
        assertEquals(Set.of("serve", "generate", "bench"), Main.COMMANDS.keySet());
        for (CommandFlags command : Main.COMMANDS.values()) {
            CliRun r = run(command.command(), "--help");
            assertEquals(0, r.status(), r.err());
            assertEquals("", r.err());
            String flat = r.out().replaceAll("\\s+", " ");
            Set<String> listed = matches(ENTRY, r.out());
            List<String> missing = new ArrayList<>();
            for (Flag f : command.flags()) {
                assertTrue(parserAccepts(command, f.name()), command.command() + " refuses " + f.name());
                if (!listed.contains(f.name())
                        || !flat.contains(f.synopsis() + " ")
                        || !flat.contains("(default: " + f.defaultText() + ")")) {
                    missing.add(f.name());
                }
            }
            assertEquals(List.of(), missing, command.command() + " --help leaves out flags or defaults:\n" + r.out());
            for (String f : listed) {
                assertTrue(
                        parserAccepts(command, f),
                        command.command() + " --help lists " + f + ", its parser refuses it");
            }
            assertFalse(parserAccepts(command, "--no-such-flag"), "the parser refuses what no table names");
        }
    }

    /** The flags the issue found missing from the shared text, and only serve's flags under serve. */
    @Test
    void serveHelpIsServesOwn() {
        CliRun r = run("serve", "--help");
        String flat = r.out().replaceAll("\\s+", " ");
        for (String f : List.of(
                "--decode-concurrency N",
                "--prompt-concurrency M",
                "--kv-budget BYTES",
                "--max-body-bytes N",
                "--max-prompt-tokens N",
                "--allowed-origins LIST")) {
            assertTrue(flat.contains(f), f + " missing:\n" + r.out());
        }
        assertTrue(flat.contains("--decode-concurrency N requests run at once"), r.out());
        assertTrue(flat.contains("(default: " + ConcurrencyFlags.DEFAULT_DECODE_CONCURRENCY + ")"), r.out());
        assertTrue(flat.contains("(default: " + EngineConfig.DEFAULT_PREFILL_SHARE + ")"), r.out());
        assertFalse(r.out().contains("--prompt-tokens"), "generate's flags are not serve's:\n" + r.out());
        assertFalse(run("generate", "--help").out().contains("--max-body-bytes"));
    }

    /** Help runs nothing: no model is looked for (the directory does not exist), whatever else is given. */
    @Test
    void helpExitsZeroWithoutLoadingAModel() {
        for (String[] argv : List.of(
                new String[] {"serve", "--model", "/nonexistent/model", "--port", "x", "--help"},
                new String[] {"generate", "--model", "/nonexistent/model", "-h"},
                new String[] {"help", "generate"})) {
            CliRun r = run(argv);
            assertEquals(0, r.status(), String.join(" ", argv) + ": " + r.err());
            assertEquals("", r.err(), String.join(" ", argv));
            assertTrue(r.out().startsWith("usage: mlx-ring " + (argv[0].equals("help") ? argv[1] : argv[0])), r.out());
        }
        CliRun global = run("help");
        assertEquals(0, global.status());
        assertTrue(global.out().contains("'mlx-ring COMMAND --help'"), global.out());
        CliRun unknown = run("help", "nosuch");
        assertEquals(2, unknown.status());
        assertTrue(
                unknown.err().contains("help takes one command name (bench, generate, serve), got 'nosuch'"),
                unknown.err());
        CliRun bad = run("serve", "--no-such-flag");
        assertEquals(2, bad.status());
        assertTrue(bad.err().contains("run 'mlx-ring serve --help' for its flags"), bad.err());
    }

    /** docs/cli.md's synopsis of each command (the text block under its heading) names exactly its parser's flags. */
    @Test
    void docsCliSynopsesNameTheParsersFlags() throws IOException {
        String doc = Files.readString(ProjectHome.get().resolve("docs/cli.md"));
        for (CommandFlags command : Main.COMMANDS.values()) {
            int heading = doc.indexOf("\n## " + command.command() + "\n");
            assertTrue(heading >= 0, "docs/cli.md has no '## " + command.command() + "' section");
            int open = doc.indexOf("```text\n", heading);
            int close = doc.indexOf("\n```", open + 1);
            String synopsis = doc.substring(open, close);
            assertTrue(synopsis.contains("mlx-ring " + command.command()), synopsis);
            assertEquals(
                    new TreeSet<>(Flag.names(command.flags())),
                    matches(FLAG, synopsis),
                    "docs/cli.md's " + command.command() + " synopsis and the parser disagree");
        }
    }
}
