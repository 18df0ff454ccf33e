package dev.mlxring.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The machine a run measured from, for the results JSON: CPU model ({@code /proc/cpuinfo}),
 * logical cores, load averages ({@code /proc/loadavg}), OS and Java versions. What cannot be read
 * is left out.
 */
public final class MachineInfo {
    private MachineInfo() {}

    public static Map<String, Object> now() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("cpu", cpuModel());
        m.put("cores", Runtime.getRuntime().availableProcessors());
        String load = read("/proc/loadavg");
        if (load != null) {
            String[] f = load.trim().split("\\s+");
            if (f.length >= 3) {
                m.put("load_1m", Double.parseDouble(f[0]));
                m.put("load_5m", Double.parseDouble(f[1]));
                m.put("load_15m", Double.parseDouble(f[2]));
            }
        }
        m.put(
                "os",
                System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                        + System.getProperty("os.arch"));
        m.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        return m;
    }

    private static String cpuModel() {
        String info = read("/proc/cpuinfo");
        if (info != null) {
            for (String line : info.split("\n")) {
                if (line.startsWith("model name") && line.contains(":")) {
                    return line.substring(line.indexOf(':') + 1).trim();
                }
            }
        }
        return System.getProperty("os.arch");
    }

    private static String read(String file) {
        try {
            return Files.readString(Path.of(file));
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
