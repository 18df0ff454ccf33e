package dev.mlxring.prep;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Feature-level parity with transformers' Jinja2 environment: small templates, one per Python /
 * Jinja2 feature that ChatTemplate extends Jinjava for (str methods, slices with steps, Python
 * str() of values, tojson, None vs undefined, truthiness, operator precedence, whitespace
 * control, ...), each rendered by the oracle (transformers' render_jinja_template) and by Java.
 */
class ChatTemplateFeatureParityTest {

    @TempDir
    static Path work;

    /** name, template. */
    static final String[][] FEATURES = {
        {
            "split no arg",
            "{{ '  a b  \\t c \\n'.split() }}|{{ ''.split() }}|{{ ' x  y '.split(None, 1) }}|{{ 'a b c'.rsplit(None, 1) }}"
        },
        {
            "split literal sep",
            "{{ 'a.b..c'.split('.') }}|{{ 'a.b.c'.split('.', 1) }}|{{ 'a||b|c'.split('|') }}|{{ 'x.y.z'.rsplit('.', 1) }}|{{ 'a*b'.split('*')[-1] }}"
        },
        {"split maxsplit kw", "{{ 'a b c d'.split(maxsplit=2) }}|{{ 'k=v=w'.split('=', maxsplit=1) }}"},
        {
            "strip family",
            "[{{ 'xxhixx'.strip('x') }}][{{ '  hi  '.lstrip() }}][{{ '  hi  '.rstrip() }}][{{ '\\u00a0hi\\u3000'.strip() }}][{{ '\\n\\nabc\\n'.strip('\\n') }}][{{ 'abcba'.rstrip('ab') }}]"
        },
        {
            "startswith endswith",
            "{{ 'Hello'.startswith('He') }} {{ 'Hello'.startswith(('x', 'H')) }} {{ 'Hello'.endswith('lo') }} {{ 'Hello'.startswith('l', 2) }} {{ 'Hello'.endswith('He', 0, 2) }} {{ 'Hello'.startswith('') }} {{ ''.endswith('x') }}"
        },
        {
            "case methods",
            "{{ 'hello wORLD o\\'neil straße 3rd'.title() }}|{{ 'abc ß'.upper() }}|{{ 'ÀBÇ'.lower() }}|{{ 'hELLO world'.capitalize() }}|{{ 'AbC'.swapcase() }}"
        },
        {
            "replace find count",
            "{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'a.b'.replace('.', '') }}|{{ 'abc'.find('c') }}|{{ 'abc'.find('z') }}|{{ 'abcabc'.rfind('b') }}|{{ 'abcabc'.count('bc') }}|{{ 'é😀é'.find('é', 1) }}"
        },
        {
            "join and misc str",
            "{{ ', '.join(['a', 'b']) }}|{{ 'x'.join('abc') }}|{{ 'a\\nb\\r\\nc\\n'.splitlines() }}|{{ '123'.isdigit() }}|{{ ' '.isspace() }}|{{ 'abc'.isalpha() }}|{{ 'v1.2'.removeprefix('v') }}"
        },
        {
            "slices",
            "{{ 'abcdef'[::2] }}|{{ 'abcdef'[::-1] }}|{{ 'abcdef'[1:-1] }}|{{ 'abcdef'[-2:] }}|{{ 'abcdef'[:3] }}|{{ [1, 2, 3, 4, 5][1:4:2] }}|{{ [1, 2, 3][::-1] }}|{{ 'héllo😀'[-2:] }}|{{ 'abc'[5:] }}|{{ [1, 2, 3][-10:2] }}"
        },
        {
            "reversed messages",
            "{% for m in messages[::-1] %}{{ loop.index0 }}:{{ m.role }} {% endfor %}|{{ (messages[1:] | map(attribute='content') | list) }}"
        },
        {"string repetition", "{{ '=' * 3 }}{{ 2 * 'ab' }}{{ '-' * 0 }}|{{ [0] * 3 }}"},
        {
            "python str of values",
            "{{ true }} {{ false }} {{ none }} {{ [1, 'a', none, true, 1.5] }} {{ {'k': 'v', 'n': none, 'q': \"it's\"} }} {{ data.b }} {{ data.a }}"
        },
        {
            "tojson",
            "{{ data | tojson }}\n{{ 'é\"\\n\\t\\\\</x>' | tojson }}\n{{ data | tojson(sort_keys=true) }}\n{{ [] | tojson }} {{ {} | tojson }} {{ none | tojson }} {{ 1.0 | tojson }} {{ big | tojson }}"
        },
        {"tojson indent", "{{ data | tojson(indent=2) }}\n{{ data.b | tojson(indent=4) }}"},
        {
            "items and dict iteration",
            "{% for k, v in data|items %}{{ k }}={{ v }};{% endfor %}|{% for k, v in data.items() %}{{ k }};{% endfor %}|{% for k in data %}{{ k }},{% endfor %}|{{ data.keys() | list }}"
        },
        {"generation tag", "a{% generation %}gen {{ 1 + 1 }}{% endgeneration %}b"},
        {"raise_exception", "before{{ raise_exception('boom ' ~ 42) }}after"},
        {
            "undefined vs none",
            "[{{ undefined_var }}]{{ undefined_var is defined }} {{ none is none }} {{ undefined_var is none }} {{ data.missing is defined }} {{ data.get('missing') is none }} {{ data.get('missing', 'd') }} {{ data.n is none }} {{ data.n is defined }} {{ tools is none }} {{ tools is defined }}"
        },
        {
            "truthiness",
            "{{ 'y' if 'false' else 'n' }}{% if 'false' %}T{% endif %}{% if 0.0 %}x{% else %}y{% endif %}{% if data.e %}E{% endif %}{% if none %}N{% endif %}|{{ [] or 'fallback' }}|{{ 'a' and 'b' }}|{{ '' and 'b' }}|{{ 0 or none or 'last' }}"
        },
        {
            "not precedence",
            "{{ not 'x' in 'xyz' }} {{ not 1 == 2 }} {{ not 'a' is string }} {{ 'x' not in 'abc' }} {{ not false and true }}"
        },
        {
            "namespace",
            "{% set ns = namespace(i=messages|length - 1, s='', found=false) %}{% for m in messages %}{% set ns.s = ns.s + m.role[0] %}{% if m.role == 'assistant' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.i }} {{ ns.s }} {{ ns.found }}"
        },
        {
            "loop controls and vars",
            "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i > 4 %}{% break %}{% endif %}{{ i }}{% endfor %}|{% for m in messages %}{{ loop.index }}/{{ loop.length }}{{ '!' if loop.first }}{{ '$' if loop.last }}{{ loop.revindex0 }} {% endfor %}"
        },
        {
            "macros",
            "{% macro fmt(x, sep='-') %}[{{ x }}{{ sep }}]{% endmacro %}{{ fmt('a') }}{{ fmt('b', sep='+') }}{{ fmt(1) }}"
        },
        {
            "whitespace control",
            "<\n  {% if true %}\n    yes\n  {% endif %}\n  {%- if true -%}\n    tight\n  {%- endif %}\n  {{- ' exp ' -}}\n  after\n{# comment #}\n  {%- for i in [1, 2] %}\n  item{{ i }}\n  {% endfor %}\n>\n"
        },
        {
            "filters",
            "{{ '  x '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'abc'|upper }}|{{ 'ABC'|lower }}|{{ 'x'|length }}|{{ '😀é'|length }}|{{ [1, 2]|length }}|{{ ['a', 'b']|join(', ') }}|{{ [true, none, 1]|join('/') }}|{{ 'a-b-c'|replace('-', '+') }}|{{ 42|string }}|{{ true|string }}|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}|{{ [3, 1, 2]|sort|list }}|{{ [1, 2, 3]|first }}|{{ [1, 2, 3]|last }}|{{ missing|default('dflt') }}|{{ data|length }}"
        },
        {
            "numbers",
            "{{ 7 // 2 }} {{ 7 / 2 }} {{ 7 % 3 }} {{ 2 ** 10 }} {{ 1.0 }} {{ 0.1 + 0.2 }} {{ 10 / 5 }} {{ -3 }} {{ 1.5 * 2 }} {{ 3 - 5 }} {{ data.r }} {{ 1e-07 }} {{ 123456789.5 }}"
        },
        {
            "comparisons",
            "{{ 1 == 1.0 }} {{ 'a' == 'a' }} {{ 'a' != 'b' }} {{ 2 > 1 }} {{ 2 <= 1 }} {{ messages|length > 2 }} {{ none == none }}"
        },
        {
            "indexing",
            "{{ messages[0].content }}|{{ messages[0]['role'] }}|{{ messages[-1].content }}|{{ data['b'][0] }}|{{ data.b[-1] }}|{{ 'abc'[1] }}|{{ 'abc'[-1] }}"
        },
        {
            "string literals",
            "{{ 'tab\\there' }}|{{ \"quote\\\"d\" }}|{{ 'back\\\\slash' }}|{{ 'uni\\u00e9\\x41' }}|{{ 'it\\'s' }}|{{ \"new\\nline\" }}"
        },
        {"set block", "{% set x %}block {{ 1 }} set{% endset %}[{{ x }}]{% set y = 'a' ~ 1 ~ true ~ none %}{{ y }}"},
        {"concat type error", "{{ 'a' + 1 }}"},
        {"add undefined error", "{{ 'a' + undefined_var }}"},
        {
            "list and dict ops",
            "{{ [1] + [2, 3] }}|{{ 'b' in data }} {{ 'zz' in data }} {{ 1 in [1, 2] }} {{ 'ab' in 'cabd' }}|{{ dict(a=1, b='x') }}|{{ range(3)|list }}"
        },
        {
            "tests",
            "{{ data is mapping }} {{ 'x' is string }} {{ [1] is sequence }} {{ 'x' is iterable }} {{ 1 is number }} {{ true is number }} {{ 1.5 is integer }} {{ 1 is integer }} {{ 3 is odd }} {{ 4 is even }} {{ 4 is divisibleby 2 }} {{ true is boolean }} {{ undefined_var is iterable }} {{ none is iterable }} {{ false is false }} {{ 0 is false }}"
        },
        {
            "selectattr map",
            "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }}|{{ messages | map(attribute='role') | join(',') }}|{{ messages | rejectattr('role', 'equalto', 'user') | list | length }}"
        },
        {
            "content blocks",
            "{% for m in messages %}{% if m.content is string %}s:{{ m.content }}{% else %}{% for c in m.content %}{{ c.type }}{% if c.text is defined %}={{ c.text }}{% endif %},{% endfor %}{% endif %};{% endfor %}"
        },
        {"special tokens", "{{ bos_token }}|{{ eos_token }}|{{ unk_token is defined }}|{{ pad_token }}"},
        {"undefined attribute of undefined", "{{ undefined_var.attr }}"},
        {
            "llama 3.1 idioms",
            "{%- if not date_string is defined %}{%- set date_string = '26 Jul 2024' %}{%- endif %}{{ 'Today Date: ' + date_string }}|{%- set system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}{{ system_message }} {{ messages|length }}|{%- for k, v in data.a | items %}{{ k + '=\"' + v + '\"' }}{%- if not loop.last %}, {% endif %}{%- endfor %}"
        },
        {
            "mistral idioms",
            "{%- for message in messages[:3] %}{%- if (message['role'] == 'user') != (loop.index0 % 2 == 1) %}bad{% endif %}{{ loop.index0 is even }}{{ message['content']|length }}{% endfor %}|{{ messages[0]['content'] + '\n\n' }}"
        },
        {
            "scoping",
            "{% set y = 1 %}{% for m in messages %}{% set y = 2 %}{% endfor %}{{ y }}|{% if messages[0]['role'] == 'system' %}{% set x = messages[0]['content'] %}{% endif %}{{ x }}"
        },
        {
            "tuple unpacking and cycle",
            "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{{ loop.cycle('x', 'y') }}{% endfor %}"
        },
        {
            "dict get and literals",
            "{{ messages[0].get('content') }}|{{ messages[0].get('nope', 'dflt') }}|{{ messages[0].get('nope') }}|{% set d = {'a': 1, 'b': {'c': [1, 2]}} %}{{ d.a }}{{ d['b'].c[1] }}{{ d }}"
        },
        {
            "more filters",
            "{{ (messages | last).role }}|{{ messages | selectattr('role', 'eq', 'user') | list | length }}|{{ '%s-%s'|format(1, 'b') }}|{{ [1, 2, 2, 3]|unique|list }}|{{ ['b', 'a']|sort|join }}|{{ 'x' if none else 'y' }}|{{ messages|map(attribute='role')|first }}"
        },
        {
            "tool_calls guard",
            "{% for m in messages %}{% if m.tool_calls is defined and m.tool_calls is not none and m.tool_calls|length > 0 %}T{% else %}-{% endif %}{% endfor %}"
        },
        {
            "whitespace control 2",
            "A\n  {%- if true %}\n  x\n{%- endif %}\n  {{ 'y' }}  {% if true %}z{% endif %}\n{%+ if true %}w{% endif %}\n    {#- c -#}\n  v\n"
        },
        {
            "python equality",
            "{{ 1 == '1' }} {{ '1' == 1 }} {{ true == 1 }} {{ 1 == 1.0 }} {{ [1, 'a'] == [1, 'a'] }} {{ {'a': 1} == {'a': 1.0} }} {{ none == undefined_var }} {{ 'a' != 'a' }}"
        },
        {
            "sum min max round",
            "{{ [1, 2, 3]|sum }} {{ [1, 2.5]|sum }} {{ [1, 5, 2]|max }} {{ [3, 1]|min }} {{ ['b', 'A', 'c']|max }} {{ 2.5|round }} {{ 3.5|round }} {{ 3.14159|round(3, 'floor') }} {{ 2.675|round(2) }} {{ 7|round }}"
        },
        {
            "modulo and unary minus",
            "{{ -7 % 3 }} {{ 7 % -3 }} {{ -7.5 % 2 }} {{ -3|abs }} {{ --3|abs }} {{ 1 - 2|abs }} {{ -messages|length }} {{ -2 ** 2 }}"
        },
        {
            "default filter and tests after filters",
            "{{ x|default('d') }} {{ ''|default('e', true) }} [{{ ''|default('e') }}] {{ none|default('n') }} [{{ x|d }}] {{ x|default(none) is none }} {{ messages|length is even }}"
        },
        {
            "int and float conversions",
            "{{ '42'|int + 1 }} {{ 3.7|int }} {{ '2.5'|float }} {{ 2|float }} {{ 3.14159|round(2) }}"
        },
    };

    static Map<String, Object> msg(String role, Object content) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", role);
        m.put("content", content);
        return m;
    }

    @Test
    void featuresMatchTransformers() throws IOException {
        Path dir = work.resolve("feature-tokenizer");
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("tokenizer_config.json"), """
                {"bos_token": {"__type": "AddedToken", "content": "<s>", "special": true},
                 "eos_token": "</s>", "pad_token": null, "chat_template": "{{ bos_token }}"}
                """);
        ChatTemplate base = ChatTemplate.load(dir);
        assertEquals(Map.of("bos_token", "<s>", "eos_token", "</s>"), base.specialTokens());

        List<Map<String, Object>> messages = List.of(
                msg("system", "Sys"),
                msg("user", "Hi"),
                msg("assistant", "Hello"),
                msg(
                        "user",
                        List.of(
                                Map.of("type", "image"),
                                new LinkedHashMap<>(Map.of("type", "text", "text", "What?")))));
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("b", Arrays.asList(1, 2.5, true, null, "x", "ü"));
        data.put("a", new LinkedHashMap<>(Map.of("nested", "ü\"q")));
        data.put("e", List.of());
        data.put("f", Map.of());
        data.put("n", null);
        data.put("r", 0.1);
        Map<String, Object> kwargs = new LinkedHashMap<>();
        kwargs.put("data", data);
        kwargs.put("big", 12345678901234L);

        List<Map<String, Object>> cases = new ArrayList<>();
        for (String[] f : FEATURES) {
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("name", f[0]);
            c.put("chat_template", f[1]);
            c.put("messages", messages);
            c.put("add_generation_prompt", false);
            c.put("kwargs", kwargs);
            cases.add(c);
        }
        Path casesFile = Files.createTempFile(work, "features", ".json");
        PythonOracle.JSON.writeValue(casesFile.toFile(), cases);
        JsonNode py = PythonOracle.runScriptJson(
                "chat_template_oracle.py", work, "--model-dir", dir.toString(), "--cases", casesFile.toString());
        JsonNode results = py.path("results");
        assertEquals(FEATURES.length, results.size());

        List<String> bad = new ArrayList<>();
        for (int i = 0; i < FEATURES.length; i++) {
            String name = FEATURES[i][0];
            JsonNode r = results.get(i);
            ChatTemplate t = ChatTemplate.of(FEATURES[i][1], base.specialTokens());
            String java = null;
            ChatTemplate.TemplateException err = null;
            try {
                java = t.render(messages, false, kwargs);
            } catch (ChatTemplate.TemplateException e) {
                err = e;
            }
            if (r.has("text")) {
                String expected = r.get("text").asText();
                if (err != null) {
                    bad.add("[" + name + "] python " + ChatTemplateParityTest.esc(expected) + "\n      java raised "
                            + err.getMessage());
                } else if (!expected.equals(java)) {
                    bad.add("[" + name + "]\n      python " + ChatTemplateParityTest.esc(expected) + "\n      java   "
                            + ChatTemplateParityTest.esc(java));
                }
            } else if (err == null) {
                bad.add("[" + name + "] python raised " + r.path("error_type").asText() + ": "
                        + r.path("error").asText() + "\n      java rendered " + ChatTemplateParityTest.esc(java));
            } else if (r.path("error_type").asText().equals("TemplateError")
                    && !r.path("error").asText().equals(err.templateMessage())) {
                bad.add("[" + name + "] python raise_exception("
                        + r.path("error").asText() + "), java " + err.getMessage());
            }
        }
        if (!bad.isEmpty()) {
            fail(bad.size() + " of " + FEATURES.length + " features differ from transformers "
                    + py.path("transformers_version").asText() + ":\n  " + String.join("\n  ", bad));
        }
        System.out.printf(
                "[chat-template features] %d features identical to transformers %s%n",
                FEATURES.length, py.path("transformers_version").asText());
    }
}
