package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A scrape of {@code /metrics} read back as {@code series -> value} ("name{labels}" exactly as
 * written), after checking the text format's shape: every sample line is
 * {@code name[{labels}] value}, and every sample's family was announced by {@code # HELP} and
 * {@code # TYPE} before it.
 */
public record MetricsText(Map<String, Double> series) {
    private static final Pattern SAMPLE = Pattern.compile(
            "([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\"(,[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\")*})?"
                    + " (\\S+)");
    private static final Pattern TYPE =
            Pattern.compile("# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|info|unknown)");
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    public static MetricsText parse(String text) {
        Map<String, Double> series = new HashMap<>();
        Set<String> helped = new HashSet<>();
        Set<String> typed = new HashSet<>();
        for (String line : text.split("\n")) {
            if (line.startsWith("# HELP ")) {
                helped.add(line.split(" ")[2]);
                continue;
            }
            if (line.startsWith("# TYPE ")) {
                Matcher t = TYPE.matcher(line);
                assertTrue(t.matches(), "malformed TYPE line: " + line);
                typed.add(t.group(1));
                continue;
            }
            Matcher m = SAMPLE.matcher(line);
            assertTrue(m.matches(), "malformed sample line: " + line);
            String name = m.group(1);
            String family = familyOf(name, typed);
            assertTrue(family != null && helped.contains(family), "sample before its # HELP/# TYPE: " + line);
            series.put(name + (m.group(2) == null ? "" : m.group(2)), Double.parseDouble(m.group(4)));
        }
        return new MetricsText(series);
    }

    private static String familyOf(String name, Set<String> typed) {
        if (typed.contains(name)) {
            return name;
        }
        for (String suffix : new String[] {"_total", "_bucket", "_count", "_sum", "_created", "_info"}) {
            if (name.endsWith(suffix) && typed.contains(name.substring(0, name.length() - suffix.length()))) {
                return name.substring(0, name.length() - suffix.length());
            }
        }
        return null;
    }

    public static MetricsText scrape(String baseUrl, String apiKey) throws Exception {
        var b = HttpRequest.newBuilder(URI.create(baseUrl + "/metrics")).GET();
        if (apiKey != null) {
            b.header("Authorization", "Bearer " + apiKey);
        }
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        assertTrue(r.statusCode() == 200, "GET /metrics: " + r.statusCode() + " " + r.body());
        assertTrue(
                r.headers().firstValue("Content-Type").orElse("").startsWith("text/plain; version=0.0.4"),
                r.headers().toString());
        return parse(r.body());
    }

    /**
     * Scrapes until {@code condition} holds (the access log and request counters are written when
     * an exchange has ended, just after the client read its last byte), failing after 20 s with
     * the last scrape.
     */
    public static MetricsText awaitScrape(String baseUrl, String apiKey, Predicate<MetricsText> condition)
            throws Exception {
        long deadline = System.nanoTime() + 20_000_000_000L;
        MetricsText m;
        do {
            m = scrape(baseUrl, apiKey);
            if (condition.test(m)) {
                return m;
            }
            Thread.sleep(20);
        } while (System.nanoTime() < deadline);
        fail("metrics never met the condition; last scrape: " + m.series());
        return m;
    }

    /** The series' value, or 0 when it is absent (a counter never incremented has no labelled series). */
    public double value(String series) {
        return this.series.getOrDefault(series, 0.0);
    }

    public boolean has(String series) {
        return this.series.containsKey(series);
    }
}
