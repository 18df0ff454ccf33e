package dev.mlxring.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * {@code mlx-ring bench serve} from validated options to the results folder: runs the plan
 * ({@link BenchRunner}), writes the JSON and Markdown ({@link ResultsWriter}), draws the plots
 * ({@link Plotter}) and records in both files whether they were drawn, then prints the Markdown
 * table to {@code out}.
 */
public final class BenchServe {
    private BenchServe() {}

    /** Runs {@code options}; returns the results document as written. */
    public static Map<String, Object> run(BenchOptions options, PrintStream out, PrintStream err, boolean terminal)
            throws IOException, InterruptedException {
        return write(options, new BenchRunner(options, err, terminal).run(), out, err);
    }

    /** Writes the results folder of {@code run} (JSON, Markdown, plots) and prints the table; returns the document. */
    public static Map<String, Object> write(BenchOptions options, BenchRunner.Run run, PrintStream out, PrintStream err)
            throws IOException {
        Map<String, Object> doc = ResultsWriter.document(options, run);
        Path dir = options.out();
        ResultsWriter.write(dir, doc, "");
        String note = options.plots() ? Plotter.plot(dir) : "Plots not drawn: --no-plots.";
        doc.put("plots", note.startsWith("Plots:") ? List.of("throughput.png", "latency_cdf.png") : List.of());
        doc.put("plots_note", note);
        ResultsWriter.write(dir, doc, note);
        out.print(ResultsWriter.markdown(doc, note));
        err.println("[bench] results in " + dir.toAbsolutePath() + " (" + ResultsWriter.JSON_FILE + ", "
                + ResultsWriter.MARKDOWN_FILE + (note.startsWith("Plots:") ? ", PNG plots" : "; " + note) + ")");
        return doc;
    }
}
