package dev.mlxring.prep.jinja;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.mlxring.prep.ChatTemplate;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The extension's own rules that the parity tests cannot pin down: a fixed clock, lstrip_blocks on the source. */
class PyJinjavaTest {

    @Test
    void strftimeNowUsesTheClock() {
        var saved = PyGlobals.clock;
        try {
            PyGlobals.clock = () -> ZonedDateTime.of(2024, 7, 5, 14, 3, 9, 0, ZoneOffset.UTC);
            ChatTemplate t = ChatTemplate.of(
                    "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M:%S %A %B %j %I%p %%') }}",
                    Map.of());
            assertEquals(
                    "05 Jul 2024|2024-07-05 14:03:09 Friday July 187 02PM %",
                    t.render(List.of(Map.of("role", "user", "content", "x")), false));
        } finally {
            PyGlobals.clock = saved;
        }
    }

    @Test
    void lstripBlocksFollowsJinja2() {
        assertEquals("a\n{% if x %}", PyJinjava.lstripBlocks("a\n  {% if x %}"));
        assertEquals("{% if x %}", PyJinjava.lstripBlocks("\t {% if x %}"));
        assertEquals("{{ y }}  {% if x %}", PyJinjava.lstripBlocks("{{ y }}  {% if x %}"));
        assertEquals("a\n  {%- if x %}", PyJinjava.lstripBlocks("a\n  {%- if x %}"));
        assertEquals("a\n  {% if x %}", PyJinjava.lstripBlocks("a\n  {%+ if x %}"));
        assertEquals("a\n{# c #}", PyJinjava.lstripBlocks("a\n    {# c #}"));
        assertEquals("{{ '\n  {% x' }}", PyJinjava.lstripBlocks("{{ '\n  {% x' }}"));
        assertEquals("{% raw %}\n  {% x %}{% endraw %}", PyJinjava.lstripBlocks("{% raw %}\n  {% x %}{% endraw %}"));
    }

    @Test
    void stringEscapesAreJinja2s() {
        // Jinja2 (python3): '\x41\101\u00e9\q' renders AAé\q; '\x+f' and '\N{ degree sign }' are
        // TemplateSyntaxErrors (truncated \xXX escape, unknown Unicode character name).
        List<Map<String, Object>> user = List.of(Map.of("role", "user", "content", "x"));
        assertEquals(
                "AA\u00e9\\q",
                ChatTemplate.of("{{ '\\x41\\101\\u00e9\\q' }}", Map.of()).render(user, false));
        assertEquals(
                "\u00b0", ChatTemplate.of("{{ '\\N{degree sign}' }}", Map.of()).render(user, false));
        for (String bad : List.of("{{ '\\x+f' }}", "{{ '\\N{ degree sign }' }}", "{{ '\\U00110000' }}")) {
            assertThrows(
                    ChatTemplate.TemplateException.class,
                    () -> ChatTemplate.of(bad, Map.of()).render(user, false),
                    bad);
        }
    }

    @Test
    void aBadArgumentToDictGetFailsTheRender() {
        // Jinja2 (python3) raises TypeError for both: get expected at least 1 argument / at most 2.
        List<Map<String, Object>> user = List.of(Map.of("role", "user", "content", "x"));
        for (String bad : List.of("{{ {'a': 1}.get() }}", "{{ {'a': 1}.get('a', 2, 3) }}")) {
            assertThrows(
                    ChatTemplate.TemplateException.class,
                    () -> ChatTemplate.of(bad, Map.of()).render(user, false),
                    bad);
        }
    }
}
