package dev.mlxring.prep;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.prep.jinja.PyJinjava;
import dev.mlxring.pycompat.PyStrings;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.spi.ToolProvider;
import org.junit.jupiter.api.Test;

/**
 * No import circle among the classes of prep-stage (the Jinja extension included) or of
 * pycompat: read from the compiled classes with the JDK's {@code jdeps}, nested classes folded
 * into their top-level class.
 */
class ClassCycleTest {

    @Test
    void prepStageHasNoClassCycle() throws Exception {
        assertEquals(List.of(), cycles(PyJinjava.class, "dev.mlxring.prep"));
    }

    @Test
    void pycompatHasNoClassCycle() throws Exception {
        assertEquals(List.of(), cycles(PyStrings.class, "dev.mlxring.pycompat"));
    }

    /** The strongly connected groups of more than one class, among the classes under {@code prefix}. */
    private static List<List<String>> cycles(Class<?> inModule, String prefix) throws Exception {
        Path classes = Path.of(
                inModule.getProtectionDomain().getCodeSource().getLocation().toURI());
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int rc = ToolProvider.findFirst("jdeps")
                .orElseThrow()
                .run(new PrintWriter(out), new PrintWriter(err), "-verbose:class", "-filter:none", classes.toString());
        assertEquals(0, rc, "jdeps failed: " + err);
        Map<String, Set<String>> edges = new TreeMap<>();
        for (String line : out.toString().split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 3 && f[1].equals("->") && f[0].startsWith(prefix) && f[2].startsWith(prefix)) {
                String from = f[0].replaceAll("\\$.*", "");
                String to = f[2].replaceAll("\\$.*", "");
                edges.computeIfAbsent(from, k -> new TreeSet<>());
                if (!from.equals(to)) {
                    edges.get(from).add(to);
                }
            }
        }
        assertTrue(edges.size() > 3, "jdeps listed no classes under " + prefix + ":\n" + out);
        return new Tarjan(edges).groups;
    }

    /** Tarjan's strongly connected components. */
    private static final class Tarjan {
        private final Map<String, Set<String>> edges;
        private final Map<String, Integer> index = new HashMap<>();
        private final Map<String, Integer> low = new HashMap<>();
        private final Deque<String> stack = new ArrayDeque<>();
        private final List<List<String>> groups = new ArrayList<>();

        Tarjan(Map<String, Set<String>> edges) {
            this.edges = edges;
            for (String v : edges.keySet()) {
                if (!index.containsKey(v)) {
                    visit(v);
                }
            }
        }

        private void visit(String v) {
            index.put(v, index.size());
            low.put(v, index.get(v));
            stack.push(v);
            for (String w : edges.getOrDefault(v, Set.of())) {
                if (!index.containsKey(w)) {
                    visit(w);
                    low.put(v, Math.min(low.get(v), low.get(w)));
                } else if (stack.contains(w)) {
                    low.put(v, Math.min(low.get(v), index.get(w)));
                }
            }
            if (low.get(v).equals(index.get(v))) {
                List<String> group = new ArrayList<>();
                String w;
                do {
                    w = stack.pop();
                    group.add(w);
                } while (!w.equals(v));
                if (group.size() > 1) {
                    groups.add(group.stream().sorted().toList());
                }
            }
        }
    }
}
