package dev.mlxring.ingress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.ProjectHome;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The module rule of docs/architecture.md, read from the poms: dependencies point inward, so no
 * module depends on a stage module (an artifact named {@code *-stage}), in any scope or type
 * (test-jar included), except the composition roots that wire the stages together.
 */
final class ModuleDependencyRuleTest {
    /** The modules that may depend on every stage: they assemble the engine. */
    private static final Set<String> COMPOSITION_ROOTS = Set.of("engine", "ingress", "perf");

    private static final String GROUP_ID = "dev.mlxring";

    @Test
    void noModuleButACompositionRootDependsOnAStage() throws Exception {
        Path home = ProjectHome.get();
        List<String> modules = childTexts(parse(home.resolve("pom.xml")).getDocumentElement(), "modules", "module");
        assertTrue(modules.containsAll(COMPOSITION_ROOTS), "the composition roots are modules: " + modules);
        assertTrue(
                modules.stream().filter(ModuleDependencyRuleTest::isStage).count() >= 4,
                "the four stage modules are found: " + modules);
        List<String> violations = new ArrayList<>();
        for (String module : modules) {
            if (COMPOSITION_ROOTS.contains(module)) {
                continue;
            }
            for (String dependency : internalDependencies(home.resolve(module).resolve("pom.xml"))) {
                if (isStage(dependency) && !dependency.equals(module)) {
                    violations.add(module + " -> " + dependency);
                }
            }
        }
        assertEquals(List.of(), violations, "only " + COMPOSITION_ROOTS + " may depend on a stage module");
    }

    /**
     * {@code bench}, the benchmark client, measures servers over HTTP; it depends on no module of
     * this project, so what it measures is never linked into what measures it.
     */
    @Test
    void theBenchmarkClientDependsOnNoModuleOfTheEngine() throws Exception {
        Path home = ProjectHome.get();
        assertTrue(childTexts(parse(home.resolve("pom.xml")).getDocumentElement(), "modules", "module")
                .contains("bench"));
        assertEquals(List.of(), internalDependencies(home.resolve("bench").resolve("pom.xml")));
    }

    private static boolean isStage(String artifactId) {
        return artifactId.endsWith("-stage");
    }

    /** The artifactIds of this project's modules that a pom names under {@code <dependencies>}. */
    private static List<String> internalDependencies(Path pom) throws Exception {
        assertTrue(Files.isRegularFile(pom), "module pom exists: " + pom);
        List<String> ids = new ArrayList<>();
        Element dependencies = child(parse(pom).getDocumentElement(), "dependencies");
        if (dependencies == null) {
            return ids;
        }
        for (Element dependency : children(dependencies, "dependency")) {
            Element group = child(dependency, "groupId");
            Element artifact = child(dependency, "artifactId");
            if (group != null
                    && artifact != null
                    && GROUP_ID.equals(group.getTextContent().trim())) {
                ids.add(artifact.getTextContent().trim());
            }
        }
        return ids;
    }

    private static Document parse(Path pom) throws Exception {
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        return factory.newDocumentBuilder().parse(pom.toFile());
    }

    private static List<String> childTexts(Element parent, String container, String name) {
        Element c = child(parent, container);
        List<String> texts = new ArrayList<>();
        if (c != null) {
            for (Element e : children(c, name)) {
                texts.add(e.getTextContent().trim());
            }
        }
        return texts;
    }

    private static Element child(Element parent, String name) {
        List<Element> found = children(parent, name);
        return found.isEmpty() ? null : found.getFirst();
    }

    private static List<Element> children(Element parent, String name) {
        List<Element> found = new ArrayList<>();
        NodeList nodes = parent.getChildNodes();
        for (int i = 0; i < nodes.getLength(); i++) {
            if (nodes.item(i).getNodeType() == Node.ELEMENT_NODE
                    && nodes.item(i).getNodeName().equals(name)) {
                found.add((Element) nodes.item(i));
            }
        }
        return found;
    }
}
