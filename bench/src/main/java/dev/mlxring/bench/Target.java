package dev.mlxring.bench;

import java.net.URI;
import java.util.Map;
import java.util.Objects;

/**
 * A server under test: its name in the results, its base URL (the part before {@code /v1/…}; a
 * trailing {@code /v1} is accepted and dropped), the headers every request to it carries (an API
 * key becomes {@code Authorization: Bearer KEY}) and the model id sent in each request (null:
 * the first id its {@code /v1/models} lists, else {@code default_model}). An embedded engine is
 * {@link #inProcess}: base {@code in-process://NAME}.
 */
public record Target(String name, URI base, Map<String, String> headers, String model) {
    public Target {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(base, "base");
        headers = Map.copyOf(headers);
        if (!name.matches("[A-Za-z0-9._-]+")) {
            throw new IllegalArgumentException(
                    "a target's name is letters, digits, '.', '_' or '-', got '" + name + "'");
        }
        String scheme = base.getScheme();
        if (!"in-process".equals(scheme)) {
            base = httpBase(name, base);
        }
    }

    /** {@code base} checked as an http(s) URL, trailing slashes and {@code /v1} dropped. */
    private static URI httpBase(String name, URI base) {
        String scheme = base.getScheme();
        if (scheme == null || !(scheme.equals("http") || scheme.equals("https")) || base.getHost() == null) {
            throw new IllegalArgumentException(
                    "target " + name + ": the URL must be http://HOST[:PORT][/PATH] or https://…, got '" + base + "'");
        }
        String path = base.getPath() == null ? "" : base.getPath();
        while (path.endsWith("/")) {
            path = path.substring(0, path.length() - 1);
        }
        if (path.endsWith("/v1")) {
            path = path.substring(0, path.length() - 3);
        }
        return URI.create(scheme + "://" + base.getRawAuthority() + path);
    }

    /** An embedded engine ({@code bench engine}): base {@code in-process://NAME}, no headers, serving {@code model}. */
    public static Target inProcess(String name, String model) {
        return new Target(name, URI.create("in-process://" + name), Map.of(), model);
    }

    /** {@code NAME=URL}, as {@code --target} takes it. */
    public static Target parse(String spec) {
        int eq = spec.indexOf('=');
        if (eq <= 0 || eq == spec.length() - 1) {
            throw new IllegalArgumentException("--target takes NAME=URL, got '" + spec + "'");
        }
        URI uri;
        try {
            uri = URI.create(spec.substring(eq + 1).trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--target " + spec.substring(0, eq) + ": not a URL: " + e.getMessage());
        }
        if ("in-process".equals(uri.getScheme())) {
            throw new IllegalArgumentException("--target " + spec.substring(0, eq) + ": in-process is bench engine's");
        }
        return new Target(spec.substring(0, eq).trim(), uri, Map.of(), null);
    }

    /** This target with {@code header: value} added (replacing one of the same name). */
    public Target withHeader(String header, String value) {
        var h = new java.util.LinkedHashMap<>(headers);
        h.put(header, value);
        return new Target(name, base, h, model);
    }

    public Target withModel(String id) {
        return new Target(name, base, headers, id);
    }

    /** The URL of {@code path} (which starts with "/") on this target. */
    public URI uri(String path) {
        return URI.create(base + path);
    }

    /** Whether the host is this machine (a loopback name or address). */
    public boolean loopback() {
        String h = base.getHost();
        return h.equals("localhost") || h.startsWith("127.") || h.equals("[::1]") || h.equals("::1");
    }
}
